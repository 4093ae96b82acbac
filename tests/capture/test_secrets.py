"""A captured case holds no Secret's data and no registered secret, wherever it was read.

The investigation runs over gRPC against the real API server and test kubelet:
a crash-looping Deployment whose container has a literal secret-looking env
value and a Secret-sourced one, whose annotations and previous log carry a
secret registered with the service, a credential-shaped assignment and a
bearer token. Everything the capture wrote is searched for each of them.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import kubernetes
import yaml

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader, ResourceType
from hapi_grpc.capture import case_files
from hapi_grpc.capture.recorder import CaseRecorder
from hapi_grpc.capture.segments import closed_segments
from hapi_grpc.capture.unpack import unpack
from hapi_grpc.domain import sensitive
from tests.analyst.test_grpc import request
from tests.fakes import kube_fixtures
from tests.fakes.kube_toolset import toolset_source
from tests.fakes.kubelet import FakeKubelet
from tests.helpers.grpc_server import running_server

REGISTERED = "registered-value-7731-do-not-leak"
ANNOTATED = "annotated-password-do-not-leak"
LEAKS = (
    REGISTERED,
    ANNOTATED,
    "literal-token-do-not-leak",  # API_TOKEN env literal
    "redis-password-do-not-leak",  # the Secret's data
    base64.b64encode(b"redis-password-do-not-leak").decode(),
    "eyJhbGciOiJIUzI1NiJ9",  # a bearer JWT in the previous log
)


def written(directory: Path) -> list[Path]:
    """The files of the case captured, once the server closed its segment; the
    segment, as the server wrote it, is among them (read before it is unpacked)."""
    segments = [directory / "segments.jsonl"] if (directory / "segments.jsonl").exists() else []
    closed = closed_segments(directory)
    if closed:
        with (directory / "segments.jsonl").open("ab") as kept:
            for segment in closed:
                kept.write(segment.read_bytes())
        segments = [directory / "segments.jsonl"]
        unpack(directory)
    cases = [d for d in directory.iterdir() if not d.name.startswith(".") and d.is_dir()]
    if cases and (cases[0] / "expected.yaml").exists():
        return [*segments, *(f for f in cases[0].rglob("*") if f.is_file())]
    return []


async def captured_files(directory: Path, timeout: float = 20.0) -> list[Path]:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if found := written(directory):
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("nothing was captured")


async def test_a_captured_case_never_holds_a_secret(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
    tmp_path: Path,
) -> None:
    sensitive.register_secret(REGISTERED)
    s = kube_fixtures.crashloopbackoff(kube_api, namespace, node_name, kubelet)
    annotations = {
        "example.com/rotated": f"key rotated to {REGISTERED}",
        "example.com/db-password": ANNOTATED,
        "example.com/note": f"connect with password={ANNOTATED}",
    }
    apps = kubernetes.client.AppsV1Api(kube_api)
    apps.patch_namespaced_deployment(
        s.deployment, namespace, {"metadata": {"annotations": annotations}}
    )
    core = kubernetes.client.CoreV1Api(kube_api)
    core.patch_namespaced_pod(s.pod, namespace, {"metadata": {"annotations": annotations}})
    kubelet.set_log(
        namespace,
        s.pod,
        s.container,
        [f"using key {REGISTERED}", "FATAL config key REDIS_URL missing", "exit status 1"],
        previous=True,
    )
    capture = tmp_path / "captured"
    async with running_server(toolsets=[toolset_source(reader)], capture_dir=str(capture)) as srv:
        req = request("crashloopbackoff.json", namespace=namespace)
        result = (await srv.stub.AnalyzeIncident(req, timeout=60)).result
        files = await captured_files(capture)
    assert any(t.name == "kubernetes_pod_logs" for t in result.tool_calls)
    names = {f.name for f in files}
    assert {"segments.jsonl", "request.json", "cluster.yaml", "case.yaml", "expected.yaml"} <= names
    assert any(f.suffix == ".log" for f in files), "the log read was captured"
    text = "\n".join(f.read_text() for f in files)
    assert "FATAL config key REDIS_URL missing" in text  # what was read is there...
    assert "redis.checkout.svc" in text
    for leaked in LEAKS:  # ...but no secret
        assert leaked not in text, leaked


async def test_a_secret_read_keeps_its_keys_never_its_data(
    reader: ApiServerReader, kube_api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(kube_api)
    core.create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": "db", "annotations": {"owner": f"team {REGISTERED}"}},
            "stringData": {"password": "secret-data-do-not-leak"},
        },
    )
    recorder = CaseRecorder()
    recorded = recorder.reading(reader)
    secrets = ResourceType("", "v1", "Secret", "secrets", True)
    await recorded.get(secrets, namespace, "db", 10.0)
    await recorded.list(secrets, namespace, 10.0)
    sensitive.register_secret(REGISTERED)
    [written] = list(yaml.safe_load_all(case_files.cluster_yaml(recorder)))
    assert written["kind"] == "Secret" and written["data"] == {"password": ""}
    shown = yaml.safe_dump(written)
    assert "secret-data-do-not-leak" not in shown and REGISTERED not in shown
    assert base64.b64encode(b"secret-data-do-not-leak").decode() not in shown


def test_a_secret_registered_after_a_text_was_redacted_is_hidden_in_it_next_time() -> None:
    text = "connect with key kept-text-secret-5521"
    assert case_files.redacted({"note": text}) == {"note": text}
    sensitive.register_secret("kept-text-secret-5521")
    assert "kept-text-secret-5521" not in case_files.redacted({"note": text})["note"]


def test_a_clean_value_is_kept_as_it_is_and_every_other_is_redacted() -> None:
    """The one-pass proof (`needs_redaction`) lets a clean value through uncopied, and
    never a value the walk would change."""
    clean = {"summary": "payment-api is OOMKilled", "params": {"NAMESPACE": "payments"}}
    assert case_files.redacted(clean) is clean
    deep: dict[str, object] = {"v": "x"}
    for _ in range(70):
        deep = {"d": deep}
    changed = [
        ({"a": [{"b": f"uses {REGISTERED}"}]}, REGISTERED),
        ({"DB_PASSWORD": "hunter2-do-not-leak"}, "hunter2-do-not-leak"),
        ({"env": [{"name": "API_TOKEN", "value": "tok-do-not-leak"}]}, "tok-do-not-leak"),
        ({"note": "connect with password=pw-do-not-leak"}, "pw-do-not-leak"),
        ({"pa\u00dfword": "sharp-s-do-not-leak"}, "sharp-s-do-not-leak"),  # upper: PASSWORD
        ({"note": "lone \ud800 surrogate"}, "\ud800"),
        (deep, '"v": "x"'),
        ({"a": 'uses quoted"value-3381'}, 'quoted"value-3381'),  # JSON escapes it
    ]
    sensitive.register_secret(REGISTERED)
    try:
        for value, secret in changed:
            if secret.startswith("quoted"):
                sensitive.replace_secrets("test-quoted", [secret])
            assert secret not in json.dumps(case_files.redacted(value), ensure_ascii=False)
            [(kept, text)] = case_files.redacted_json(value)
            assert kept is not value and text == case_files.json_text(kept), secret
    finally:
        sensitive.replace_secrets("test-quoted", ())
