"""AnalyzeIncident end to end: real gRPC server, real LLM adapters, scripted LLM servers.

Each scenario plays a conversation on a `ScriptedLLMServer` (OpenAI or
Anthropic wire protocol on 127.0.0.1) and checks both the typed result that
came back over gRPC and what crossed the wire to the model and the catalog.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from hapi.v1 import analysis_pb2, service_pb2, tools_pb2
from hapi_grpc.adapters.llm.anthropic import AnthropicProvider
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.investigation.engine import EngineSettings
from hapi_grpc.domain.toolsets.workflow_catalog.tools import TOOL_DEFINITIONS
from tests.fakes.investigation import FailingCatalog, RecordingCatalog
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, StepLike
from tests.helpers.grpc_server import RunningServer, running_server

EXAMPLES = Path(__file__).parents[2] / "examples"
OOM_REQUEST = (EXAMPLES / "oomkilled.json").read_text()
CRASHLOOP_REQUEST = (EXAMPLES / "crashloopbackoff.json").read_text()
OOM_ID = "oomkill-increase-memory-v1"
GOOD = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
R = analysis_pb2.HumanReviewReason
S = tools_pb2.ToolCallStatus


def request(text: str = OOM_REQUEST) -> service_pb2.AnalyzeIncidentRequest:
    return json_format.Parse(text, service_pb2.AnalyzeIncidentRequest())


def search(query: str = "OOMKilled critical memory", **extra: Any) -> Step:
    return Step.tool_calls([("search_workflow_catalog", {"query": query, **extra})])


def validate(parameters: dict[str, Any], workflow_id: str = OOM_ID) -> Step:
    return Step.tool_calls(
        [("validate_workflow_parameters", {"workflow_id": workflow_id, "parameters": parameters})]
    )


def answer(workflow_id: str | None = OOM_ID, parameters: dict[str, Any] | None = None) -> Step:
    selected = None
    if workflow_id is not None:
        selected = {
            "workflow_id": workflow_id,
            "version": "1.0.0",
            "confidence": 0.88,
            "rationale": "steady growth to the limit, no leak pattern",
            "estimated_risk": "low",
            "parameters": GOOD if parameters is None else parameters,
        }
    return Step.text(
        json.dumps(
            {
                "analysis_summary": "payment-api is repeatedly OOMKilled",
                "root_cause_assessment": "memory limit below the working set",
                "rca_severity": "critical",
                "selected_workflow": selected,
                "alternative_workflows": [],
                "warnings": [],
                "context_used": {
                    "cluster_state": "healthy",
                    "resource_availability": "memory available on nodes",
                    "blast_radius": "one deployment",
                },
            }
        )
    )


@asynccontextmanager
async def stack(
    script: Sequence[StepLike],
    *,
    protocol: str = "openai",
    catalog: Any = None,
    settings: EngineSettings | None = None,
    request_timeout: float = 10.0,
) -> AsyncIterator[tuple[RunningServer, ScriptedLLMServer, Any]]:
    """Scripted LLM server + real provider + real gRPC server."""
    catalog = catalog if catalog is not None else RecordingCatalog()
    async with ScriptedLLMServer(protocol, script) as llm_server:  # type: ignore[arg-type]
        if protocol == "openai":
            provider: Any = OpenAICompatibleProvider(
                llm_server.base_url,
                "gpt-test",
                "sk-test-key-123",
                request_timeout=request_timeout,
                max_retries=0,
            )
        else:
            provider = AnthropicProvider(
                llm_server.base_url,
                "claude-test",
                "sk-ant-test-key",
                request_timeout=request_timeout,
                max_retries=0,
            )
        try:
            async with running_server(
                catalog=catalog,
                llm=provider,
                engine_settings=settings or EngineSettings(tool_timeout=2.0),
            ) as srv:
                yield srv, llm_server, catalog
        finally:
            await provider.close()


async def analyze(srv: RunningServer, text: str = OOM_REQUEST, deadline: float = 20) -> Any:
    response = await srv.stub.AnalyzeIncident(request(text), timeout=deadline)
    return response.result


def messages_sent(llm_server: ScriptedLLMServer, index: int = 0) -> list[dict[str, Any]]:
    return llm_server.requests[index].json["messages"]


def tool_results_sent(llm_server: ScriptedLLMServer, index: int) -> list[dict[str, Any]]:
    return [
        json.loads(m["content"]) for m in messages_sent(llm_server, index) if m["role"] == "tool"
    ]


def wire_text(llm_server: ScriptedLLMServer) -> str:
    return "\n".join(json.dumps(r.json) for r in llm_server.requests)


# --- the seed's three E2E scenarios -----------------------------------------------------


async def test_simple_incident_model_answers_without_tools() -> None:
    async with stack([answer(workflow_id=None)]) as (srv, llm_server, catalog):
        result = await analyze(srv, CRASHLOOP_REQUEST)

    assert len(llm_server.requests) == 1 and catalog.queries == []
    assert result.llm_turns == 1 and len(result.tool_calls) == 0
    # No workflow was chosen, so a human decides what to do.
    assert not result.HasField("selected_workflow")
    assert result.needs_human_review is True
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_NO_MATCHING_WORKFLOWS
    assert result.root_cause_assessment == "memory limit below the working set"
    assert result.model == "gpt-test" and result.language_model_used is True
    assert (result.token_usage.prompt_tokens, result.token_usage.completion_tokens) == (100, 20)

    body = llm_server.requests[0].json
    assert [t["function"]["name"] for t in body["tools"]] == [t.name for t in TOOL_DEFINITIONS]
    assert body["tools"][0]["function"]["parameters"] == TOOL_DEFINITIONS[0].parameters
    system, user = body["messages"]
    assert system["role"] == "system" and "validate_workflow_parameters" in system["content"]
    assert "## Signal Information\n- Signal Type: CrashLoopBackOff" in user["content"]
    assert "## Deduplication Context" not in user["content"]  # empty sections are left out


async def test_complex_incident_searches_the_catalog_and_uses_it() -> None:
    script = [search(), validate(GOOD), answer()]
    async with stack(script) as (srv, llm_server, catalog):
        result = await analyze(srv)

    assert result.needs_human_review is False
    assert result.selected_workflow.workflow_id == OOM_ID
    assert json_format.MessageToDict(result.selected_workflow.parameters) == GOOD
    assert result.selected_workflow.estimated_risk == 1  # RISK_LEVEL_LOW
    assert result.remediation_id == "rr-2026-11-22-oom-7f3a"
    assert result.token_usage.prompt_tokens == 300 and result.llm_turns == 3
    # The tool calls are typed in the response.
    first = result.tool_calls[0]
    assert first.WhichOneof("arguments") == "search_workflow_catalog"
    assert first.search_workflow_catalog.query == "OOMKilled critical memory"
    assert first.status == S.TOOL_CALL_STATUS_SUCCESS
    assert result.tool_calls[1].validate_workflow_parameters.workflow_id == OOM_ID
    assert [a.valid for a in result.validation_attempts] == [True]

    # Catalog requests: labels appended by the service, invisible to the model.
    (query,) = catalog.queries
    wire = query.to_wire()
    assert wire["filters"]["custom_labels"] == {
        "constraint": ["cost-constrained"],
        "team": ["name=payments"],
    }
    assert wire["filters"]["detected_labels"] == {"gitOpsManaged": False}
    assert wire["filters"]["environment"] == "production"
    assert wire["remediation_id"] == "rr-2026-11-22-oom-7f3a"
    sent = wire_text(llm_server)
    for hidden in ("cost-constrained", "name=payments", "gitOpsManaged", "rr-2026-11-22-oom-7f3a"):
        assert hidden not in sent
    user = messages_sent(llm_server)[1]["content"]
    for section in (
        "Signal Information",
        "Error Details",
        "Deduplication Context",
        "Cluster Context",
        "Business Context (for workflow search, not for RCA)",
    ):
        assert f"## {section}" in user
    assert tool_results_sent(llm_server, 1)[0]["workflows"][0]["parameters"]


async def test_data_storage_down_degrades_and_completes() -> None:
    script = [search(), answer(workflow_id=None)]
    async with stack(script, catalog=FailingCatalog()) as (srv, llm_server, _):
        result = await analyze(srv)

    assert tool_results_sent(llm_server, 1)[0]["fallback"] == "continue_without_context"
    assert result.tool_calls[0].status == S.TOOL_CALL_STATUS_ERROR
    assert result.needs_human_review is True
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_DATA_STORAGE_UNAVAILABLE
    assert any("unavailable" in w for w in result.warnings)
    assert result.root_cause_assessment  # the investigation still completed


# --- self-correction and the answer check ---------------------------------------------


async def test_self_correction_after_invalid_parameters() -> None:
    bad = {**GOOD, "MEMORY_LIMIT_NEW": "2 gigabytes"}
    async with stack([search(), validate(bad), validate(GOOD), answer()]) as (srv, llm_server, _):
        result = await analyze(srv)

    verdict = tool_results_sent(llm_server, 2)[-1]
    assert verdict["status"] == "invalid" and verdict["errors"][0]["code"] == "PATTERN_MISMATCH"
    assert [a.valid for a in result.validation_attempts] == [False, True]
    assert result.validation_attempts[0].errors[0].parameter == "MEMORY_LIMIT_NEW"
    assert result.selected_workflow.workflow_id == OOM_ID
    assert result.needs_human_review is False


async def test_three_failed_attempts_need_human_review() -> None:
    bad = [{**GOOD, "MEMORY_LIMIT_NEW": f"{n} GB"} for n in (1, 2, 3)]
    script = [
        search(),
        validate(bad[0]),
        validate(bad[1]),
        validate(bad[2]),
        answer(workflow_id=None),
    ]
    async with stack(script) as (srv, _, _):
        result = await analyze(srv)

    assert len(result.validation_attempts) == 3
    assert not any(a.valid for a in result.validation_attempts)
    assert not result.HasField("selected_workflow")
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_PARAMETER_VALIDATION_FAILED


async def test_hallucinated_workflow_id_is_sent_back_and_corrected() -> None:
    script = [search(), answer(workflow_id="oom-fixer-9000"), answer()]
    async with stack(script) as (srv, llm_server, _):
        result = await analyze(srv)

    feedback = messages_sent(llm_server, 2)[-1]
    assert feedback["role"] == "user" and "oom-fixer-9000" in feedback["content"]
    assert result.selected_workflow.workflow_id == OOM_ID
    assert [a.source for a in result.validation_attempts] == [
        analysis_pb2.VALIDATION_SOURCE_FINAL_ANSWER
    ]


async def test_unparseable_output_then_recovery() -> None:
    script = [search(), Step.text("The pod ran out of memory, I suggest more memory."), answer()]
    async with stack(script) as (srv, llm_server, _):
        result = await analyze(srv)

    assert "no JSON object" in messages_sent(llm_server, 2)[-1]["content"]
    assert result.selected_workflow.workflow_id == OOM_ID
    assert result.needs_human_review is False


# --- bounds ---------------------------------------------------------------------------------


async def test_tool_call_cap() -> None:
    script = [
        search("OOMKilled a"),
        search("OOMKilled b"),
        search("OOMKilled c"),
        answer(workflow_id=None),
    ]
    async with stack(script, settings=EngineSettings(max_tool_calls=2)) as (
        srv,
        llm_server,
        catalog,
    ):
        result = await analyze(srv)

    assert [c.status for c in result.tool_calls] == [
        S.TOOL_CALL_STATUS_SUCCESS,
        S.TOOL_CALL_STATUS_SUCCESS,
        S.TOOL_CALL_STATUS_LIMIT_EXCEEDED,
    ]
    assert "limit reached" in tool_results_sent(llm_server, 3)[-1]["error"]
    assert len(catalog.queries) == 2


async def test_looping_llm_ends_with_a_partial_result() -> None:
    script = [search()] * 3
    async with stack(script, settings=EngineSettings(max_llm_turns=3)) as (
        srv,
        llm_server,
        catalog,
    ):
        result = await analyze(srv)

    assert len(llm_server.requests) == 3 and len(catalog.queries) == 1
    # The last turn offers no tools (tool_choice "none"): its call is not run.
    assert [c.status for c in result.tool_calls][1:] == [S.TOOL_CALL_STATUS_REPEATED]
    assert llm_server.requests[-1].json["tool_choice"] == "none"
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_BUDGET_EXHAUSTED
    assert result.alternative_workflows  # best partial result: the catalog matches
    assert "Last turn" in tool_results_sent(llm_server, 2)[-1]["notice"]


async def test_llm_timeout_is_reported_as_llm_unavailable() -> None:
    script = [search(), Step.text("late", delay=5)]
    async with stack(script, request_timeout=0.3) as (srv, llm_server, _):
        result = await analyze(srv)
        assert await llm_server.wait_aborted(1)

    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_LLM_UNAVAILABLE
    assert result.llm_turns == 1
    assert "sk-test-key-123" not in str(result)


async def test_caller_deadline_bounds_the_investigation() -> None:
    script = [search(), Step.text("late", delay=30)]
    async with stack(script) as (srv, llm_server, _):
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await analyze(srv, deadline=1.5)
        elapsed = loop.time() - started
        assert await llm_server.wait_aborted(1)

    # Answered inside the caller's deadline with what was found, not DEADLINE_EXCEEDED.
    assert elapsed < 1.5
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_BUDGET_EXHAUSTED
    assert result.alternative_workflows


async def test_client_cancellation_aborts_the_model_request() -> None:
    script = [search(), Step.text("never delivered", delay=30)]
    async with stack(script) as (srv, llm_server, _):
        call = srv.stub.AnalyzeIncident(request(), timeout=30)
        assert await llm_server.wait_requests(2, within=10)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await llm_server.wait_aborted(1, within=5)
    assert len(llm_server.requests) == 2


# --- Anthropic and streaming -----------------------------------------------------------------


async def test_anthropic_provider_end_to_end() -> None:
    script = [search(), validate(GOOD), answer()]
    async with stack(script, protocol="anthropic") as (srv, llm_server, _):
        result = await analyze(srv)

    assert result.selected_workflow.workflow_id == OOM_ID
    assert result.model == "claude-test" and result.needs_human_review is False
    body = llm_server.requests[0].json
    assert [t["name"] for t in body["tools"]] == [t.name for t in TOOL_DEFINITIONS]
    assert body["tools"][1]["input_schema"] == TOOL_DEFINITIONS[1].parameters
    assert "validate_workflow_parameters" in body["system"]
    assert "cost-constrained" not in wire_text(llm_server)


async def test_streaming_reports_turns_tool_calls_attempts_then_the_result() -> None:
    script = [search(), validate(GOOD), answer()]
    async with stack(script) as (srv, _, _):
        stream = srv.stub.AnalyzeIncidentStream(
            service_pb2.AnalyzeIncidentStreamRequest(incident=request().incident), timeout=20
        )
        kinds = [event.WhichOneof("event") async for event in stream]

    assert kinds == [
        "llm_turn",
        "tool_call",
        "llm_turn",
        "tool_call",
        "validation_attempt",
        "llm_turn",
        "result",
    ]


async def test_invalid_request_is_rejected_before_any_model_call() -> None:
    async with stack([answer()]) as (srv, llm_server, _):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await srv.stub.AnalyzeIncident(service_pb2.AnalyzeIncidentRequest(), timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert llm_server.requests == []


# --- secrets in model text (issue 11 §3) and shutdown drain (§7) ----------------

PLANTED = {
    "GIT_PASSWORD=": "hunter2-git-pass-value",
    "AWS_SECRET_ACCESS_KEY=": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
    "Authorization: Bearer ": "eyPlantedBearerToken0123456789",
    "key ": "sk-plantedOpenAIkey0123456789",
}
LEAKY_TEXT = "I found " + " and ".join(f"{k}{v}" for k, v in PLANTED.items())


def _leaky_answer() -> Step:
    body = json.loads(answer().content or "{}")  # type: ignore[attr-defined]
    body["root_cause_assessment"] = "memory limit too low; " + LEAKY_TEXT
    body["analysis_summary"] = LEAKY_TEXT
    body["warnings"] = [LEAKY_TEXT]
    body["selected_workflow"]["rationale"] = LEAKY_TEXT
    return Step.text(LEAKY_TEXT + "\n" + json.dumps(body))


async def test_secret_looking_values_in_model_text_never_leave_the_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    leaky_search = Step.tool_calls(
        [("search_workflow_catalog", {"query": "OOMKilled critical " + LEAKY_TEXT[:300]})],
        text=LEAKY_TEXT,
    )
    leaky_validate = Step.tool_calls(
        [
            (
                "validate_workflow_parameters",
                {"workflow_id": OOM_ID, "parameters": {**GOOD, "NOTE": LEAKY_TEXT}},
            )
        ],
        text=LEAKY_TEXT,
    )
    script = [leaky_search, leaky_validate, _leaky_answer()]
    caplog.set_level(logging.DEBUG)
    async with stack(script * 2) as (srv, _, _):
        stream = srv.stub.AnalyzeIncidentStream(
            service_pb2.AnalyzeIncidentStreamRequest(incident=request().incident), timeout=20
        )
        events = [event async for event in stream]
    async with stack(script) as (srv, _, _):
        unary = await srv.stub.AnalyzeIncident(request(), timeout=20)

    kinds = [e.WhichOneof("event") for e in events]
    assert kinds.count("llm_turn") == 3 and kinds[-1] == "result"
    assert any("[REDACTED]" in e.llm_turn.content for e in events if e.HasField("llm_turn"))
    assert "[REDACTED]" in unary.result.root_cause_assessment
    texts = {
        "stream": "\n".join(str(e) for e in events),
        "unary": str(unary),
        "logs": "\n".join(r.getMessage() + repr(r.__dict__) for r in caplog.records),
    }
    assert "model turn" in texts["logs"]  # DEBUG turn logs were written, redacted
    for where, text in texts.items():
        for secret in PLANTED.values():
            assert secret not in text, (where, secret)


async def test_shutdown_drains_a_slow_investigation_into_a_result_for_review() -> None:
    script = [search(), Step.text("thinking", delay=30.0)]
    async with stack(script) as (srv, llm_server, _):
        call = asyncio.ensure_future(srv.stub.AnalyzeIncident(request(), timeout=60))
        assert await llm_server.wait_requests(2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await srv.server.stop(2.0)
        response = await call
        elapsed = loop.time() - started

    assert elapsed < 2.5  # inside the grace (plus scheduling noise), not the 30 s turn
    assert response.result.needs_human_review is True
    assert response.result.human_review_reason == R.HUMAN_REVIEW_REASON_BUDGET_EXHAUSTED
    assert [c.status for c in response.result.tool_calls] == [S.TOOL_CALL_STATUS_SUCCESS]
