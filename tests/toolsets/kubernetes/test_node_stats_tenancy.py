"""`kubernetes_node_stats` for a caller confined to its namespace, through the real
server (static tokens), the real API server's node proxy and the test kubelet: the
node's disk totals are all there, another namespace's pods and volumes are not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from google.protobuf import json_format

from hapi.v1 import service_pb2, tools_pb2
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from tests.fakes.investigation import wire_catalog
from tests.fakes.kube_toolset import toolset_source
from tests.fakes.kubelet import FakeKubelet, register_node
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server

GIB = 1024**3
TOKEN = "node-stats-token-4c1e93"
THEIRS = {"namespace": "team-other-5b2d", "pod": "ledger-db-0", "volume": "wal-scratch"}


def _pod(namespace: str, pod: str, volume: str, used: int) -> dict[str, Any]:
    return {
        "podRef": {"name": pod, "namespace": namespace, "uid": f"uid-{pod}"},
        "containers": [{"name": "main", "rootfs": {"usedBytes": GIB}, "logs": {"usedBytes": GIB}}],
        "volume": [{"name": volume, "usedBytes": used}],
    }


def _summary(node: str, own_namespace: str) -> dict[str, Any]:
    return {
        "node": {
            "nodeName": node,
            "fs": {"capacityBytes": 100 * GIB, "usedBytes": 92 * GIB, "availableBytes": 8 * GIB},
        },
        "pods": [
            _pod(own_namespace, "api-0", "cache", 10 * GIB),
            _pod(THEIRS["namespace"], THEIRS["pod"], THEIRS["volume"], 60 * GIB),
        ],
    }


def _request(namespace: str) -> service_pb2.AnalyzeIncidentRequest:
    body = {
        "incident": {
            "remediationId": "rr-node-stats-1",
            "incidentId": "fp-node-stats-1",
            "signal": {
                "signalType": "NodeDiskPressure",
                "severity": "SEVERITY_HIGH",
                "component": "deployment",
                "namespace": namespace,
                "resourceKind": "Deployment",
                "resourceName": "api",
            },
            "errorDetails": {"errorMessage": "pods of api evicted: the node is low on disk"},
        }
    }
    return json_format.ParseDict(body, service_pb2.AnalyzeIncidentRequest())


async def test_a_confined_caller_sees_the_totals_not_other_namespaces_volumes(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    kubelet: FakeKubelet,
    namespace: str,
    node_name: str,
    tmp_path: Path,
) -> None:
    if kubelet.node_address is None:
        pytest.skip("this machine has no non-loopback address for the node proxy to reach")
    register_node(kube_api, node_name, kubelet.port_for(node_name), address=kubelet.node_address)
    kubelet.set_stats_summary(node_name, _summary(node_name, namespace))
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n", encoding="utf-8")
    answer = {
        "analysis_summary": "the node is low on disk",
        "root_cause_assessment": "node-local volumes fill the node filesystem",
        "rca_severity": "high",
        "selected_workflow": None,
        "warnings": [],
    }
    script = [
        Step.tool_calls([("kubernetes_node_stats", {"node": node_name})]),
        Step.text(json.dumps(answer)),
    ]
    async with (
        ScriptedLLMServer("openai", script) as llm,
        running_server(
            catalog=wire_catalog(),
            toolsets=[toolset_source(reader)],
            llm_provider="openai",
            llm_base_url=llm.base_url,
            llm_model="gpt-test",
            llm_max_retries=0,
            auth_mode="static",
            auth_tokens_file=str(tokens),
            auth_static_namespaces=[namespace],
        ) as srv,
    ):
        response = await srv.stub.AnalyzeIncident(
            _request(namespace), metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=60
        )
    (call,) = [c for c in response.result.tool_calls if c.name == "kubernetes_node_stats"]
    assert call.status == tools_pb2.TOOL_CALL_STATUS_SUCCESS, call.result
    view = json.loads(call.result)["cluster_data"]
    # Every byte counts: the node's disk is judged whole.
    assert view["node_local_volumes_gib"] == 70.0
    assert view["node_fs_gib"] == {"used": 92.0, "capacity": 100.0}
    largest = view["largest_volumes"]
    assert {"namespace": namespace, "pod": "api-0", "volume": "cache", "used_gib": 10.0} in largest
    assert [v["used_gib"] for v in largest if v["namespace"] != namespace] == [60.0]
    # Another tenant's namespace, pod and volume names reach neither the caller nor the model.
    for name in THEIRS.values():
        assert name not in str(response)
        assert all(name not in json.dumps(r.json) for r in llm.requests)
