"""The remediation history toolset and the history check through the real server.

Two replicas share a real Redis; each opens its toolsets through the registry
(`app.open_toolsets`) over its own history client, as `serve` does. An
outcome reported to one replica is in the `get_remediation_history` answer
the model reads in the next investigation on the other, and the service's
own history check refuses the workflow that failed, whatever the model
decides.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hapi.v1 import analysis_pb2, service_pb2, tools_pb2
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.app import build_history
from hapi_grpc.config import Settings
from hapi_grpc.domain.investigation.engine import EngineSettings
from hapi_grpc.domain.tenancy import Tenant
from hapi_grpc.toolsets.registry import open_toolsets
from tests.application.test_report_outcome import report
from tests.domain.policy.test_grpc import OOM_ID, answer, request, search
from tests.fakes.investigation import RecordingCatalog
from tests.fakes.redis_server import RedisServer, running_redis
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, last_tool_result
from tests.helpers.grpc_server import RunningServer, running_server

R = analysis_pb2.HumanReviewReason
HISTORY = ("get_remediation_history", {"kind": "Deployment", "namespace": "payments",
                                       "name": "payment-api"})  # fmt: skip


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path) as server:
        yield server


@asynccontextmanager
async def replicas(
    llm: ScriptedLLMServer, count: int, **settings: Any
) -> AsyncIterator[list[RunningServer]]:
    """`count` real servers with the registry's toolsets (Kubernetes off)."""
    async with AsyncExitStack() as stack:
        running = []
        for _ in range(count):
            config = Settings(kubernetes="off", **settings)
            history = build_history(config)
            opened = await open_toolsets(config, history)
            stack.push_async_callback(opened.close)
            provider = OpenAICompatibleProvider(
                llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=10, max_retries=0
            )
            stack.push_async_callback(provider.close)
            server = await stack.enter_async_context(
                running_server(
                    catalog=RecordingCatalog(),
                    llm=provider,
                    engine_settings=EngineSettings(tool_timeout=2.0),
                    toolsets=opened.sources,
                    history=history,
                    **settings,
                )
            )
            running.append(server)
        yield running


def history_answer(llm: ScriptedLLMServer) -> dict[str, Any]:
    """The newest `get_remediation_history` answer the model was sent."""
    for sent in reversed(llm.requests):
        text = last_tool_result(sent.json)
        if "history_data" in text:
            return dict(json.loads(text)["history_data"])
    raise AssertionError("the model was never sent a history answer")


async def test_a_reported_failure_is_in_the_next_investigations_history_on_the_other_replica(
    redis_server: RedisServer,
) -> None:
    # The model insists after the refusal: the check holds.
    script = [search(), answer(), Step.tool_calls([HISTORY]), search(), *[answer()] * 4]
    async with (
        ScriptedLLMServer("openai", script, per_conversation=False) as llm,
        replicas(llm, 2, cache_url=redis_server.url) as (first, second),
    ):
        decided = await first.stub.AnalyzeIncident(request("rr-hist-1"), timeout=20)
        assert decided.result.selected_workflow.workflow_id == OOM_ID
        assert not decided.result.needs_human_review
        failed = report(
            "rr-hist-1",
            succeeded=None,
            failed={"reason": "BackoffLimitExceeded", "message": "step patch failed"},
            signalCleared=None,
        )
        await first.stub.ReportRemediationOutcome(failed, timeout=10)

        frames = [
            frame
            async for frame in second.stub.AnalyzeIncidentStream(
                request("rr-hist-2", service_pb2.AnalyzeIncidentStreamRequest), timeout=20
            )
        ]
    seen = history_answer(llm)
    assert seen["target"] == "payments/Deployment/payment-api"
    (entry,) = seen["recent"]
    assert entry["remediation_id"] == "rr-hist-1" and entry["outcome"] == "Failed"
    assert entry["workflow_id"] == OOM_ID and entry["failure_reason"] == "BackoffLimitExceeded"
    assert entry["automated"] is True and entry["confidence"] == pytest.approx(0.9)
    # The tool call is recorded, and the service's own check refused the repeat.
    result = next(f.result for f in frames if f.HasField("result"))
    (call,) = [c for c in result.tool_calls if c.name == "get_remediation_history"]
    assert call.status == tools_pb2.TOOL_CALL_STATUS_SUCCESS
    assert result.needs_human_review
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION
    assert not result.HasField("selected_workflow")
    assert any("rr-hist-1" in w and "BackoffLimitExceeded" in w for w in result.warnings)


async def test_the_history_check_refuses_without_the_model_reading_history(
    redis_server: RedisServer,
) -> None:
    """Two successful increases today, the signal back: review, though the model
    never called the history tool."""
    script = [search(), answer(), search(), answer(), search(), *[answer()] * 4]
    async with (
        ScriptedLLMServer("openai", script, per_conversation=False) as llm,
        replicas(llm, 2, cache_url=redis_server.url) as (first, second),
    ):
        for number, replica in ((1, first), (2, second)):
            decided = await replica.stub.AnalyzeIncident(request(f"rr-rec-{number}"), timeout=20)
            assert not decided.result.needs_human_review, number
            await second.stub.ReportRemediationOutcome(report(f"rr-rec-{number}"), timeout=10)
        third = (await first.stub.AnalyzeIncident(request("rr-rec-3"), timeout=20)).result
    assert third.needs_human_review
    assert third.human_review_reason == R.HUMAN_REVIEW_REASON_RECURRING_REMEDIATION
    assert any("rr-rec-1" in w and "rr-rec-2" in w for w in third.warnings)


async def test_an_old_success_outside_the_window_does_not_stop_automation(
    redis_server: RedisServer,
) -> None:
    script = [search(), answer()]
    async with (
        ScriptedLLMServer("openai", script, per_conversation=False) as llm,
        replicas(llm, 1, cache_url=redis_server.url) as (only,),
    ):
        for number in (1, 2):
            old = report(f"rr-old-{number}", completedAt="2020-01-01T00:00:00Z")
            await only.stub.ReportRemediationOutcome(old, timeout=10)
        decided = (await only.stub.AnalyzeIncident(request("rr-old-3"), timeout=20)).result
    assert not decided.needs_human_review
    assert decided.selected_workflow.workflow_id == OOM_ID


async def test_a_recovery_decision_keeps_its_attempt_number() -> None:
    from tests.e2e.test_recovery import recovery_request

    async with (
        ScriptedLLMServer("openai", [search(), answer()]) as llm,
        replicas(llm, 1) as (only,),
    ):
        req = recovery_request("Forbidden", attempt=2, remediation_id="rr-recovering")
        await only.stub.AnalyzeIncident(req, timeout=20)
        history = only.server.history
        for _ in range(100):  # the decision is kept on its own, after the answer
            record = await history.by_remediation_id(
                "rr-recovering", Tenant(req.incident.signal.namespace)
            )
            if record.decision is not None:
                break
            await asyncio.sleep(0.02)
    assert record.decision is not None and record.decision.recovery_attempt == 2


async def test_an_authenticated_caller_is_shown_what_was_done_not_under_which_ids(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """A history entry does not say which caller reported it, so an authenticated
    caller (a tenant of its own) reads outcomes and workflows without ids, in the
    tool's answer and in the check's warnings alike."""
    tokens = tmp_path / "tokens"
    tokens.write_text("history-caller-token-7d2e\n", encoding="utf-8")
    auth = [("authorization", "Bearer history-caller-token-7d2e")]
    script = [search(), answer(), Step.tool_calls([HISTORY]), search(), *[answer()] * 4]
    async with (
        ScriptedLLMServer("openai", script, per_conversation=False) as llm,
        replicas(
            llm,
            1,
            cache_url=redis_server.url,
            auth_mode="static",
            auth_tokens_file=str(tokens),
            auth_static_namespaces=["payments"],
            auth_static_report_namespaces=["payments"],
        ) as (only,),
    ):
        decided = await only.stub.AnalyzeIncident(request("rr-ids-1"), metadata=auth, timeout=20)
        assert decided.result.selected_workflow.workflow_id == OOM_ID
        failed = report(
            "rr-ids-1",
            succeeded=None,
            failed={"reason": "BackoffLimitExceeded"},
            signalCleared=None,
        )
        await only.stub.ReportRemediationOutcome(failed, metadata=auth, timeout=10)
        again = await only.stub.AnalyzeIncident(request("rr-ids-2"), metadata=auth, timeout=20)
    (entry,) = history_answer(llm)["recent"]
    assert entry["outcome"] == "Failed" and entry["workflow_id"] == OOM_ID
    assert "remediation_id" not in entry
    result = again.result
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION
    assert result.warnings and not any("rr-ids-1" in w for w in result.warnings)
