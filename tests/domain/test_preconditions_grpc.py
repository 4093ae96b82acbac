"""Through the real server and cluster: a selection whose declared premise does not hold
on what the service read is not automated, whatever the model says.

A scripted model reads the cluster like a model would, then proposes a state-changing
workflow. The catalog's preconditions and invariants, evaluated on the objects the
service's own tools parsed, decide: `needs_human_review` with PRECONDITION_NOT_MET and a
warning naming the condition and the observed value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes

from hapi.v1 import analysis_pb2, common_pb2, service_pb2
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.client import load_analyze_request
from tests.fakes import kube_fixtures
from tests.fakes.kube_toolset import toolset_source
from tests.fakes.kubelet import FakeKubelet
from tests.fakes.reckless_model import reckless_script
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, StepLike
from tests.helpers.grpc_server import running_server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOT_MET = analysis_pb2.HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET


def answer(workflow_id: str, version: str, parameters: dict[str, Any]) -> Step:
    return Step.text(
        json.dumps(
            {
                "analysis_summary": "remediation proposed",
                "root_cause_assessment": "as read from the cluster",
                "rca_severity": "critical",
                "selected_workflow": {
                    "workflow_id": workflow_id,
                    "version": version,
                    "confidence": 0.9,
                    "rationale": "fits",
                    "estimated_risk": "low",
                    "parameters": parameters,
                },
                "alternative_workflows": [],
                "warnings": [],
            }
        )
    )


async def analyze(
    reader: ApiServerReader,
    req: service_pb2.AnalyzeIncidentRequest,
    script: list[StepLike] | None = None,
    told: list[str] | None = None,
) -> Any:
    kwargs: dict[str, Any] = {"script_for": reckless_script} if script is None else {}
    async with ScriptedLLMServer("openai", script or (), **kwargs) as llm_server:
        provider = OpenAICompatibleProvider(
            llm_server.base_url, "gpt-test", "sk-test-key-123", request_timeout=10.0, max_retries=0
        )
        try:
            async with running_server(llm=provider, toolsets=[toolset_source(reader)]) as srv:
                result = (await srv.stub.AnalyzeIncident(req, timeout=60)).result
            if told is not None:  # what the model was sent: the messages of its last turn
                messages = llm_server.requests[-1].json["messages"]
                told.extend(str(m.get("content")) for m in messages)
            return result
        finally:
            await provider.close()


def oom_script(namespace: str, pod: str, limit: str) -> list[StepLike]:
    reads = [
        Step.tool_calls([("kubernetes_get", {"kind": "Pod", "namespace": namespace, "name": pod})]),
        Step.tool_calls(
            [("kubernetes_owner_chain", {"kind": "Pod", "namespace": namespace, "name": pod})]
        ),
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})]),
    ]
    proposal = answer(
        "oomkill-increase-memory-v1",
        "1.0.0",
        {"NAMESPACE": namespace, "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": limit},
    )
    return [*reads, *[proposal] * 4]  # insists after every rejection


async def test_a_memory_limit_below_the_current_one_goes_to_review(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.oomkilled(kube_api, namespace, node_name, kubelet)  # limit 512Mi
    req = load_analyze_request(EXAMPLES / "oomkilled.json")
    req.incident.signal.namespace = namespace
    # 524288Ki is the same 512Mi in another notation: not a raise either.
    for lower in ("256Mi", "524288Ki"):
        result = await analyze(reader, req, oom_script(namespace, s.pod, lower))
        assert not result.HasField("selected_workflow")
        assert result.needs_human_review
        assert result.human_review_reason == NOT_MET, (result.warnings, result.validation_attempts)
        named = [w for w in result.warnings if "memory_limit_raised" in w]
        assert named and "payment-api limit 512Mi" in named[0] and lower in named[0], (
            result.warnings
        )

    # The same conversation with a real raise is automated: the check is not blanket.
    result = await analyze(reader, req, oom_script(namespace, s.pod, "768Mi"))
    assert result.selected_workflow.workflow_id == "oomkill-increase-memory-v1"
    assert result.selected_workflow.parameters["MEMORY_LIMIT_NEW"] == "768Mi"
    assert not result.needs_human_review


def cordon(api: kubernetes.client.ApiClient, node: str) -> None:
    """What `kubectl cordon` does, with the note an operator leaves for the maintenance."""
    kubernetes.client.CoreV1Api(api).patch_node(
        node,
        {
            "metadata": {"annotations": {"maintenance.example.com/window": "2026-11-25 kernel"}},
            "spec": {"unschedulable": True},
        },
        _request_timeout=30,
    )


def node_request(node: str) -> service_pb2.AnalyzeIncidentRequest:
    req = load_analyze_request(EXAMPLES / "nodenotready.json")
    req.incident.signal.resource_name = node
    req.incident.signal.severity = common_pb2.SEVERITY_CRITICAL
    return req


async def test_a_drain_of_a_node_cordoned_for_maintenance_goes_to_review(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
) -> None:
    kube_fixtures.nodenotready(kube_api, namespace, node_name)
    cordon(kube_api, node_name)
    script: list[StepLike] = [
        Step.tool_calls([("kubernetes_get", {"kind": "Node", "name": node_name})]),
        Step.tool_calls([("search_workflow_catalog", {"query": "NodeNotReady critical"})]),
        *[answer("node-drain-reboot-v1", "1.2.0", {"NODE_NAME": node_name})] * 4,
    ]
    told: list[str] = []
    result = await analyze(reader, node_request(node_name), script, told)
    assert not result.HasField("selected_workflow")
    assert result.human_review_reason == NOT_MET
    named = [w for w in result.warnings if "node_not_cordoned" in w]
    assert named and f"{node_name} unschedulable=true" in named[0], result.warnings
    assert "maintenance.example.com/window" in named[0]
    # The model was told which premise failed, in time to choose another workflow.
    assert any("cannot be automated" in m and "node_not_cordoned" in m for m in told)


async def test_the_reckless_model_automates_nothing_unsafe_on_a_cordoned_node(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
) -> None:
    kube_fixtures.nodenotready(kube_api, namespace, node_name)
    cordon(kube_api, node_name)
    result = await analyze(reader, node_request(node_name))
    picked = result.selected_workflow.workflow_id if result.HasField("selected_workflow") else ""
    assert picked in ("", "collect-cluster-diagnostics-v1")
    if not picked:
        assert result.human_review_reason == NOT_MET
