"""A caller confined to its namespace, through the real server with static tokens:
the model it drives reads no other namespace's remediation history, and a target it
names in another namespace is neither kept there nor automated."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from hapi.v1 import outcome_pb2, service_pb2, tools_pb2
from hapi_grpc.app import build_history
from hapi_grpc.config import Settings
from hapi_grpc.domain.tenancy import Tenant
from hapi_grpc.toolsets.registry import open_toolsets
from tests.fakes.investigation import wire_catalog
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import RunningServer, running_server

OOM_ID = "oomkill-increase-memory-v1"
B_REMEDIATION = "rr-team-b-7d41c9e2"
CALLER = "static-token"  # the user every static token authenticates as


def _tokens(tmp_path: Path) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str]]]:
    path = tmp_path / "tokens"
    path.write_text("token-a-5e81c2\ntoken-b-93d0f7\n", encoding="utf-8")
    return (
        str(path),
        (("authorization", "Bearer token-a-5e81c2"),),
        (("authorization", "Bearer token-b-93d0f7"),),
    )


def _incident(remediation_id: str, namespace: str, name: str) -> Any:
    body = {
        "remediationId": remediation_id,
        "incidentId": f"fp-{remediation_id}",
        "signal": {
            "signalType": "OOMKilled",
            "severity": "SEVERITY_CRITICAL",
            "component": "deployment",
            "namespace": namespace,
            "resourceKind": "Deployment",
            "resourceName": name,
        },
        "errorDetails": {"errorMessage": f"{name} was OOMKilled (exit code 137)"},
    }
    return json_format.ParseDict(body, service_pb2.AnalyzeIncidentRequest().incident)


def _b_report() -> outcome_pb2.ReportRemediationOutcomeRequest:
    body = {
        "remediationId": B_REMEDIATION,
        "attempt": 1,
        "target": {"namespace": "team-b", "kind": "Deployment", "name": "payments"},
        "executed": {"workflowId": OOM_ID, "version": "1.0.0"},
        "failed": {"reason": "OOMKilled", "message": "the new limit was hit too"},
    }
    return json_format.ParseDict(body, outcome_pb2.ReportRemediationOutcomeRequest())


def _answer(target: dict[str, str] | None, parameters: dict[str, str] | None) -> str:
    selected = None
    if parameters is not None:
        selected = {
            "workflow_id": OOM_ID,
            "version": "1.0.0",
            "confidence": 0.9,
            "rationale": "memory grows to the limit",
            "estimated_risk": "low",
            "parameters": parameters,
        }
    return json.dumps(
        {
            "analysis_summary": "OOMKilled",
            "root_cause_assessment": "the memory limit is below the working set",
            "rca_severity": "critical",
            "selected_workflow": selected,
            "target_resource": target,
            "alternative_workflows": [],
            "warnings": [],
        }
    )


@contextlib.asynccontextmanager
async def _server(
    llm: ScriptedLLMServer, tokens: str, **extra: Any
) -> AsyncIterator[RunningServer]:
    """The server with its toolsets opened as `hapi-grpc serve` opens them (the
    history tool reads the history outcomes are recorded in)."""
    settings: dict[str, Any] = {
        "llm_provider": "openai",
        "llm_base_url": llm.base_url,
        "llm_model": "gpt-test",
        "llm_max_retries": 0,
        "auth_mode": "static",
        "auth_tokens_file": tokens,
        "auth_static_namespaces": ["team-*"],
        "auth_static_report_namespaces": ["team-*"],
        "kubernetes": "off",
        **extra,
    }
    config = Settings(grpc_host="127.0.0.1", grpc_port=0, metrics_port=-1, **settings)
    history = build_history(config)
    opened = await open_toolsets(config, history)
    try:
        async with running_server(
            catalog=wire_catalog(), history=history, toolsets=opened.sources, **settings
        ) as srv:
            yield srv
    finally:
        await opened.close()


def _statuses(calls: Any) -> dict[str, int]:
    return {c.name: c.status for c in calls}


async def test_a_confined_caller_reads_no_other_namespaces_history(tmp_path: Path) -> None:
    tokens, a, b = _tokens(tmp_path)
    history_call = ("get_remediation_history", {"kind": "Deployment", "namespace": "team-b",
                                                "name": "payments"})  # fmt: skip
    own_call = ("get_remediation_history", {"kind": "Deployment", "namespace": "team-a",
                                            "name": "api"})  # fmt: skip
    script = [
        Step.tool_calls([history_call]),
        Step.tool_calls([own_call]),
        Step.text(_answer(None, None)),
    ]
    async with ScriptedLLMServer("openai", script) as llm, _server(llm, tokens) as srv:
        ack = await srv.stub.ReportRemediationOutcome(_b_report(), metadata=b, timeout=30)
        assert not ack.already_recorded
        record = await srv.server.history.by_remediation_id(B_REMEDIATION, Tenant("team-b", CALLER))
        assert [e.failure_reason for e in record.outcomes] == ["OOMKilled"]  # there to leak

        unary = service_pb2.AnalyzeIncidentRequest(incident=_incident("rr-a-1", "team-a", "api"))
        response = await srv.stub.AnalyzeIncident(unary, metadata=a, timeout=30)
        stream = service_pb2.AnalyzeIncidentStreamRequest(
            incident=_incident("rr-a-2", "team-a", "api-2")
        )
        frames = [f async for f in srv.stub.AnalyzeIncidentStream(stream, metadata=a, timeout=30)]

    for calls in (response.result.tool_calls, frames[-1].result.tool_calls):
        history = [c for c in calls if c.name == "get_remediation_history"]
        assert [c.status for c in history] == [
            tools_pb2.TOOL_CALL_STATUS_INVALID_ARGUMENTS,  # team-b: refused
            tools_pb2.TOOL_CALL_STATUS_SUCCESS,  # its own namespace: read
        ]
        assert "may read only namespace 'team-a'" in history[0].result
    for text in (str(response), *(str(f) for f in frames)):
        assert B_REMEDIATION not in text
    # Nor did the model see it: every request it was sent.
    assert all(B_REMEDIATION not in json.dumps(r.json) for r in llm.requests)


async def test_a_target_in_another_namespace_is_reviewed_and_not_kept_there(
    tmp_path: Path,
) -> None:
    tokens, a, _ = _tokens(tmp_path)
    parameters = {"NAMESPACE": "team-a", "DEPLOYMENT_NAME": "api", "MEMORY_LIMIT_NEW": "1Gi"}
    elsewhere = {"namespace": "team-b", "kind": "Deployment", "name": "payments"}
    script = [
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})]),
        Step.tool_calls(
            [("validate_workflow_parameters", {"workflow_id": OOM_ID, "parameters": parameters})]
        ),
        Step.text(_answer(elsewhere, parameters)),
    ]
    async with ScriptedLLMServer("openai", script) as llm, _server(llm, tokens) as srv:
        request = service_pb2.AnalyzeIncidentRequest(incident=_incident("rr-a-3", "team-a", "api"))
        response = await srv.stub.AnalyzeIncident(request, metadata=a, timeout=30)
        result = response.result
        assert result.selected_workflow.workflow_id == OOM_ID  # the model did select it
        assert result.needs_human_review
        assert any("outside the one this caller may investigate" in w for w in result.warnings)
        assert result.target_resource.namespace != "team-b"
        kept_there = await srv.server.history.by_remediation_id("rr-a-3", Tenant("team-b", CALLER))
        assert kept_there.decision is None
        kept = await srv.server.history.by_remediation_id("rr-a-3", Tenant("team-a", CALLER))
        assert kept.decision is not None
        assert (kept.decision.target.namespace, kept.decision.target.name) == ("team-a", "api")
        assert not kept.decision.automated


async def test_the_operators_deny_list_bounds_the_history_too(tmp_path: Path) -> None:
    tokens, a, _ = _tokens(tmp_path)
    call = ("get_remediation_history", {"kind": "Deployment", "namespace": "team-a", "name": "api"})
    script = [Step.tool_calls([call]), Step.text(_answer(None, None))]
    async with (
        ScriptedLLMServer("openai", script) as llm,
        _server(llm, tokens, kubernetes_namespaces_deny=["team-a"]) as srv,
    ):
        unary = service_pb2.AnalyzeIncidentRequest(incident=_incident("rr-a-4", "team-a", "api"))
        response = await srv.stub.AnalyzeIncident(unary, metadata=a, timeout=30)
    (history,) = response.result.tool_calls
    assert history.status == tools_pb2.TOOL_CALL_STATUS_INVALID_ARGUMENTS
    assert "excluded from investigation by configuration" in history.result


async def test_a_confined_caller_reads_a_nodes_history_without_its_ids(tmp_path: Path) -> None:
    tokens, a, b = _tokens(tmp_path)
    node = {"namespace": "", "kind": "Node", "name": "worker-7"}
    call = ("get_remediation_history", {"kind": "Node", "namespace": "", "name": "worker-7"})
    script = [Step.tool_calls([call]), Step.text(_answer(None, None))]
    async with (
        ScriptedLLMServer("openai", script) as llm,
        _server(llm, tokens, auth_static_report_namespaces=["*"]) as srv,
    ):
        report = _b_report()
        report.target.CopyFrom(json_format.ParseDict(node, type(report.target)()))
        await srv.stub.ReportRemediationOutcome(report, metadata=b, timeout=30)
        unary = service_pb2.AnalyzeIncidentRequest(incident=_incident("rr-a-5", "team-a", "api"))
        response = await srv.stub.AnalyzeIncident(unary, metadata=a, timeout=30)
    (history,) = response.result.tool_calls
    assert history.status == tools_pb2.TOOL_CALL_STATUS_SUCCESS
    (entry,) = json.loads(history.result)["history_data"]["recent"]
    assert entry["outcome"] == "Failed"  # what was done to the node is read
    assert B_REMEDIATION not in str(response)
    assert all(B_REMEDIATION not in json.dumps(r.json) for r in llm.requests)
