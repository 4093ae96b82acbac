"""A case's YAML files are written by libyaml's emitter, never the pure-Python one
(several times slower on pod-sized objects, on the writer thread that bounds capture)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import yaml
import yaml.emitter

from hapi_grpc.adapters.kubernetes.reader import ResourceType
from hapi_grpc.capture import case_files
from hapi_grpc.capture.recorder import CaseRecorder
from hapi_grpc.cases.labels import dump_yaml

PODS = ResourceType("", "v1", "Pod", "pods", True)


def _entry(**kw: Any) -> SimpleNamespace:
    base = dict(remediation_uid="rr-1", attempt=1, outcome="Success", workflow_id="wf",
                workflow_version="1", parameters={}, failure_reason="", assessment_reason="",
                signal_resolved=True, pre_spec_hash="", post_spec_hash="", completed_at=0.0,
                action_type="")  # fmt: skip
    return SimpleNamespace(**(base | kw))


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_case_files_never_use_the_pure_python_emitter(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = CaseRecorder()
    for i in range(3):
        pod = {"metadata": {"namespace": "a", "name": f"p{i}"}, "spec": {"containers": []}}
        recorder.objects.append((PODS, pod))
    recorder.alerts.append({"labels": {"alertname": "X", "namespace": "a"}})
    recorder.history.append(SimpleNamespace(target_resource="a/Deployment/d", tier1=[_entry()],
                                            tier2=[]))  # fmt: skip

    def refuse(*_: Any) -> None:
        raise AssertionError("the pure-Python emitter ran")

    monkeypatch.setattr(yaml.emitter.Emitter, "emit", refuse)
    docs = list(yaml.load_all(case_files.cluster_yaml(recorder), Loader=yaml.CSafeLoader))
    assert [d["metadata"]["name"] for d in docs] == ["p0", "p1", "p2"]
    assert yaml.load(case_files.alerts_yaml(recorder), Loader=yaml.CSafeLoader)
    assert yaml.load(case_files.history_yaml(recorder, 60.0), Loader=yaml.CSafeLoader)
    assert dump_yaml({"b": 1, "a": 2}) == "b: 1\na: 2\n"  # key order kept
