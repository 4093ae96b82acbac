"""Recovery requests through the real server: a failed execution is never handed back.

A recovery request names what was executed and how it failed. Whatever the model
proposes (a scripted one that insists, the reckless one), the same workflow with
the same parameters as a failed execution is not automated, unless the failure
shows the workflow's own pod never ran. Attempts beyond the maximum get review
with a reason of their own, each attempt is an investigation of its own for
idempotency, and malformed recovery input is INVALID_ARGUMENT with field violations.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from hapi.v1 import analysis_pb2, service_pb2, service_pb2_grpc
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.app import build_server
from hapi_grpc.client import field_violations
from hapi_grpc.config import Settings
from tests.fakes.investigation import bundled_catalog
from tests.fakes.reckless_model import reckless_script
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, StepLike

EXAMPLES = Path(__file__).parents[2] / "examples"
WORKFLOW = "oomkill-increase-memory-v1"
FAILED = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
REPEATS = analysis_pb2.HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION
EXHAUSTED = analysis_pb2.HUMAN_REVIEW_REASON_RECOVERY_ATTEMPTS_EXHAUSTED


def recovery_request(
    reason: str = "Forbidden",
    *,
    workflow: str = WORKFLOW,
    parameters: dict[str, Any] | None = None,
    attempt: int = 1,
    max_attempts: int = 3,
    remediation_id: str = "rr-recovery-1",
) -> service_pb2.AnalyzeIncidentRequest:
    req = json_format.Parse(
        (EXAMPLES / "recovery-limitrange.json").read_text(), service_pb2.AnalyzeIncidentRequest()
    )
    req.incident.remediation_id = remediation_id
    recovery = req.incident.recovery
    recovery.attempt_number = attempt
    recovery.max_attempts = max_attempts
    previous = recovery.previous_executions[0]
    previous.workflow.workflow_id = workflow
    previous.workflow.parameters.Clear()
    previous.workflow.parameters.update(FAILED if parameters is None else parameters)
    previous.failure.reason = reason
    return req


def proposal(parameters: dict[str, Any]) -> str:
    return json.dumps(
        {
            "analysis_summary": "payment-api is OOMKilled",
            "root_cause_assessment": "memory limit below the working set",
            "rca_severity": "critical",
            "selected_workflow": {
                "workflow_id": WORKFLOW,
                "version": "1.0.0",
                "confidence": 0.9,
                "rationale": "raise the limit",
                "estimated_risk": "low",
                "parameters": parameters,
            },
            "alternative_workflows": [],
            "warnings": [],
        }
    )


def insisting(parameters: dict[str, Any]) -> list[StepLike]:
    """Searches, validates, then proposes the same selection after every rejection."""
    return [
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})]),
        Step.tool_calls(
            [("validate_workflow_parameters", {"workflow_id": WORKFLOW, "parameters": parameters})]
        ),
        *[Step.text(proposal(parameters))] * 4,
    ]


@contextlib.asynccontextmanager
async def serving(
    llm_server: ScriptedLLMServer,
) -> AsyncIterator[service_pb2_grpc.IncidentAnalysisServiceStub]:
    """A real server on loopback with the scripted model; premises left out, so only
    the recovery rules stand between a proposal and its automation."""
    provider = OpenAICompatibleProvider(
        llm_server.base_url, "gpt-test", "sk-test-key-123", request_timeout=10.0, max_retries=0
    )
    config = Settings(grpc_host="127.0.0.1", grpc_port=0, metrics_port=-1)
    server = build_server(config, llm=provider, catalog=bundled_catalog(declarations=False))
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield service_pb2_grpc.IncidentAnalysisServiceStub(channel)
    finally:
        await channel.close()
        await server.stop(0)
        await provider.close()


async def analyze(script: list[StepLike], req: Any) -> tuple[Any, ScriptedLLMServer]:
    async with ScriptedLLMServer("openai", script) as llm, serving(llm) as stub:
        return (await stub.AnalyzeIncident(req, timeout=20)).result, llm


def tool_results(llm: ScriptedLLMServer) -> list[str]:
    return [
        str(m.get("content")) for m in llm.requests[-1].json["messages"] if m.get("role") == "tool"
    ]


@pytest.mark.parametrize("reason", ["Forbidden", "FailedCreate", "DeadlineExceeded", "OOMKilled"])
async def test_the_failed_workflow_with_the_same_parameters_is_not_automated(reason: str) -> None:
    # "1024Mi" is the 1Gi that failed, in another notation: still a repeat.
    same = {**FAILED, "MEMORY_LIMIT_NEW": "1024Mi"}
    result, llm = await analyze(insisting(same), recovery_request(reason))
    assert not result.HasField("selected_workflow")
    assert result.needs_human_review and result.human_review_reason == REPEATS, result.warnings
    assert any("previous execution 1" in w and reason in w for w in result.warnings)
    # The validation tool already told the model, so it could choose another.
    told = [json.loads(t) for t in tool_results(llm) if "automation" in t]
    assert told and told[0]["review_reason"] == "REPEATS_FAILED_REMEDIATION"
    assert "previous execution 1" in told[0]["refused_because"]
    # What failed was in the prompt, before the facts of the current state.
    prompt = str(llm.requests[0].json["messages"][1]["content"])
    assert prompt.index("## Failed Execution 1") < prompt.index("## Signal Information")
    assert f"- Failure Reason: {reason}" in prompt


async def test_other_parameters_or_a_runner_failure_may_be_automated() -> None:
    # A different limit is another remediation (the check is not blanket).
    other = {**FAILED, "MEMORY_LIMIT_NEW": "768Mi"}
    result, _ = await analyze(insisting(other), recovery_request("FailedCreate"))
    assert result.selected_workflow.workflow_id == WORKFLOW
    assert not result.needs_human_review

    # The workflow's own pod never ran: the same workflow may run again.
    result, _ = await analyze(insisting(FAILED), recovery_request("ImagePullBackOff"))
    assert result.selected_workflow.parameters["MEMORY_LIMIT_NEW"] == "1Gi"
    assert not result.needs_human_review


async def test_the_reckless_model_never_gets_the_failed_execution_back() -> None:
    # What the reckless model automates without recovery...
    plain = recovery_request(remediation_id="rr-recovery-plain")
    plain.incident.ClearField("recovery")
    async with ScriptedLLMServer("openai", script_for=reckless_script, strict=False) as llm:
        async with serving(llm) as stub:
            first = (await stub.AnalyzeIncident(plain, timeout=20)).result
            assert first.HasField("selected_workflow") and not first.needs_human_review
            chosen = json_format.MessageToDict(first.selected_workflow.parameters)
            # ...failed: the recovery request names it, and it is not automated again.
            req = recovery_request(
                "BackoffLimitExceeded",
                workflow=first.selected_workflow.workflow_id,
                parameters=chosen,
            )
            again = (await stub.AnalyzeIncident(req, timeout=20)).result
    assert again.needs_human_review and again.human_review_reason == REPEATS
    assert not again.HasField("selected_workflow")


async def test_attempts_beyond_the_maximum_get_review_without_an_investigation() -> None:
    req = recovery_request(attempt=4, max_attempts=3)
    result, llm = await analyze([], req)
    assert result.needs_human_review and result.human_review_reason == EXHAUSTED
    assert not result.HasField("selected_workflow")
    assert "4" in result.analysis_summary and "3" in result.analysis_summary
    assert any(WORKFLOW in w for w in result.warnings)
    assert llm.requests == []  # nothing left to investigate for


async def test_each_recovery_attempt_is_an_investigation_of_its_own() -> None:
    first_analysis = recovery_request()
    first_analysis.incident.ClearField("recovery")
    attempt_1 = recovery_request("Forbidden", attempt=1)
    attempt_2 = recovery_request("Forbidden", attempt=2)
    answer = [
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})]),
        Step.text(proposal({**FAILED, "MEMORY_LIMIT_NEW": "768Mi"})),
    ]
    async with ScriptedLLMServer("openai", answer * 3) as llm, serving(llm) as stub:
        first = (await stub.AnalyzeIncident(first_analysis, timeout=20)).result
        one = (await stub.AnalyzeIncident(attempt_1, timeout=20)).result
        one_again = (await stub.AnalyzeIncident(attempt_1, timeout=20)).result
        two = (await stub.AnalyzeIncident(attempt_2, timeout=20)).result
        assert len(llm.requests) == 6  # three investigations, two turns each
    assert not first.reused and not one.reused and not two.reused
    assert one_again.reused and one_again.completed_at == one.completed_at


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: setattr(r, "attempt_number", 0), "incident.recovery.attempt_number"),
        (lambda r: setattr(r, "max_attempts", 0), "incident.recovery.max_attempts"),
        (lambda r: r.ClearField("previous_executions"), "incident.recovery.previous_executions"),
        (
            lambda r: r.previous_executions[0].failure.ClearField("reason"),
            "incident.recovery.previous_executions[0].failure.reason",
        ),
        (
            lambda r: setattr(r.previous_executions[0].failure, "reason", "not a reason"),
            "incident.recovery.previous_executions[0].failure.reason",
        ),
        (
            lambda r: setattr(r.previous_executions[0].failure, "message", "x" * 5000),
            "incident.recovery.previous_executions[0].failure.message",
        ),
        (
            lambda r: r.previous_executions[0].workflow.parameters.update(
                {f"P{i}": i for i in range(65)}
            ),
            "incident.recovery.previous_executions[0].workflow.parameters",
        ),
        (
            lambda r: r.previous_executions[0].workflow.parameters.update(
                {"NESTED": list(range(300))}
            ),
            "incident.recovery.previous_executions[0].workflow.parameters",
        ),
        (
            lambda r: setattr(r.previous_executions[0].workflow, "workflow_id", "../etc"),
            "incident.recovery.previous_executions[0].workflow.workflow_id",
        ),
        (
            lambda r: r.previous_executions.extend([r.previous_executions[0]] * 10),
            "incident.recovery.previous_executions",
        ),
    ],
)
async def test_bad_recovery_input_is_invalid_argument(change: Any, field: str) -> None:
    req = recovery_request()
    change(req.incident.recovery)
    async with ScriptedLLMServer("openai", []) as llm, serving(llm) as stub:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.AnalyzeIncident(req, timeout=20)
        assert llm.requests == []
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in [v.field for v in field_violations(err.value)], field_violations(err.value)


async def test_a_different_recovery_under_the_same_attempt_is_already_exists() -> None:
    answer = [
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})]),
        Step.text(proposal({**FAILED, "MEMORY_LIMIT_NEW": "768Mi"})),
    ]
    async with ScriptedLLMServer("openai", answer) as llm, serving(llm) as stub:
        await stub.AnalyzeIncident(recovery_request("Forbidden"), timeout=20)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.AnalyzeIncident(recovery_request("OOMKilled"), timeout=20)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "'rr-recovery-1' (recovery attempt 1)" in str(err.value.details())
    assert "#" not in str(err.value.details())  # the internal key is not shown


async def test_the_stream_answers_a_recovery_like_the_unary_call() -> None:
    req = recovery_request(attempt=4, max_attempts=3)
    stream_req = service_pb2.AnalyzeIncidentStreamRequest(incident=req.incident)
    async with ScriptedLLMServer("openai", []) as llm, serving(llm) as stub:
        events = [m async for m in stub.AnalyzeIncidentStream(stream_req, timeout=20)]
    assert [e.WhichOneof("event") for e in events] == ["result"]
    assert events[-1].result.human_review_reason == EXHAUSTED
