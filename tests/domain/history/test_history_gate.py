"""The history check (`domain.history.gate`) and the history tool over the embedded
history: what in a target's past refuses automation, and what does not."""

from __future__ import annotations

import asyncio
import gc
import time
import warnings
from typing import Any

import pytest

from hapi_grpc.adapters.history.embedded import build_embedded_history
from hapi_grpc.domain.catalog import Declarations
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError, HistoryUnavailableError
from hapi_grpc.domain.execution import ExecutedWorkflow, ExecutionFailure
from hapi_grpc.domain.history import Outcome, OutcomeReport, spec_hash
from hapi_grpc.domain.history.gate import HistoryCheck
from hapi_grpc.domain.incident import Incident, SignalInfo
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.result import HumanReviewReason, TargetResource
from hapi_grpc.domain.selection_gate import Candidate
from hapi_grpc.domain.toolsets.tool import ToolContext
from hapi_grpc.toolsets.kubernetes.facts import record_object
from hapi_grpc.toolsets.remediation_history.tools import (
    GetRemediationHistory,
    GetRemediationHistoryArgs,
)
from tests.fakes.local_process import free_port

OOM = "oomkill-increase-memory-v1"
TARGET = TargetResource("payments", "Deployment", "payment-api")
HOUR = 3600.0
BEFORE = {"replicas": 2, "template": {"memory": "512Mi"}}
AFTER = {"replicas": 2, "template": {"memory": "1Gi"}}


def incident(kind: str = "Deployment", name: str = "payment-api") -> Incident:
    signal = SignalInfo("OOMKilled", namespace="payments", resource_kind=kind, resource_name=name)
    return Incident(remediation_id="rr-now", signal=signal)


def outcome(rid: str, ago: float, result: Outcome = Outcome.SUCCESS, **extra: Any) -> OutcomeReport:
    reason = extra.pop("failure_reason", "")
    return OutcomeReport(
        remediation_id=rid,
        attempt=1,
        target=TARGET,
        outcome=result,
        executed=ExecutedWorkflow(
            extra.pop("workflow_id", OOM), "1.0.0", {"MEMORY_LIMIT_NEW": "1Gi"}
        ),
        failure=ExecutionFailure(reason) if reason else None,
        completed_at=time.time() - ago,
        **extra,
    )


async def check(
    reports: list[OutcomeReport],
    *,
    read_only: bool = False,
    observed: Observed | None = None,
    subject: Incident | None = None,
) -> tuple[Any, HistoryCheck]:
    history = build_embedded_history(None)
    for report in reports:
        await history.record_outcome(report)
    gate = HistoryCheck(history)
    candidate = Candidate(
        subject or incident(),
        observed or Observed(),
        Declarations(read_only=read_only),
        OOM,
        None,
        {"MEMORY_LIMIT_NEW": "2Gi"},
    )
    return await gate(candidate), gate


async def test_a_workflow_that_failed_on_the_target_in_the_window_is_refused() -> None:
    failed = outcome("rr-1", HOUR, Outcome.FAILED, failure_reason="BackoffLimitExceeded")
    veto, _ = await check([failed])
    assert veto is not None and veto.reason is HumanReviewReason.REPEATS_FAILED_REMEDIATION
    assert "rr-1" in veto.message and "BackoffLimitExceeded" in veto.message
    assert veto.source == "history:rr-1"


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "FailedScheduling"])
async def test_a_runner_that_never_started_does_not_count(reason: str) -> None:
    veto, _ = await check([outcome("rr-1", HOUR, Outcome.FAILED, failure_reason=reason)])
    assert veto is None


async def test_a_failure_outside_the_window_or_of_another_workflow_does_not_count() -> None:
    old = outcome("rr-old", 30 * HOUR, Outcome.FAILED, failure_reason="Forbidden")
    other = outcome("rr-x", HOUR, Outcome.FAILED, failure_reason="Forbidden", workflow_id="x-v1")
    veto, _ = await check([old, other])
    assert veto is None


async def test_two_successes_in_the_window_and_the_signal_back_is_review() -> None:
    veto, _ = await check([outcome("rr-1", 7 * HOUR), outcome("rr-2", 2 * HOUR)])
    assert veto is not None and veto.reason is HumanReviewReason.RECURRING_REMEDIATION
    assert "rr-1" in veto.message and "rr-2" in veto.message
    one, _ = await check([outcome("rr-2", 2 * HOUR)])
    assert one is None


async def test_a_read_only_workflow_is_never_refused() -> None:
    failed = outcome("rr-1", HOUR, Outcome.FAILED, failure_reason="Forbidden")
    veto, _ = await check([failed, outcome("rr-2", HOUR), outcome("rr-3", HOUR)], read_only=True)
    assert veto is None


async def test_a_spec_put_back_as_before_a_successful_fix_is_review() -> None:
    undone = outcome(
        "rr-1", 40 * HOUR, pre_spec_hash=spec_hash(BEFORE), post_spec_hash=spec_hash(AFTER)
    )
    observed = Observed()
    record_object(observed, 
        {"kind": "Deployment", "metadata": {"namespace": "payments", "name": "payment-api"},
         "spec": BEFORE}
    )  # fmt: skip
    veto, _ = await check([undone], observed=observed)
    assert veto is not None and veto.reason is HumanReviewReason.RECURRING_REMEDIATION
    assert "undone" in veto.message and "rr-1" in veto.message
    # The spec as the fix left it: nothing against.
    fixed = Observed()
    record_object(fixed, 
        {"kind": "Deployment", "metadata": {"namespace": "payments", "name": "payment-api"},
         "spec": AFTER}
    )  # fmt: skip
    assert (await check([undone], observed=fixed))[0] is None


async def test_the_pods_owner_read_in_the_investigation_is_checked_too() -> None:
    observed = Observed()
    pod = {"kind": "Pod", "metadata": {"namespace": "payments", "name": "payment-api-x"}}
    record_object(observed, pod)
    observed.add_owner_chain(
        "Pod",
        "payments",
        "payment-api-x",
        ["payments/core/Pod/payment-api-x", "payments/apps/Deployment/payment-api"],
    )
    failed = outcome("rr-1", HOUR, Outcome.FAILED, failure_reason="Forbidden")
    veto, _ = await check([failed], observed=observed, subject=incident("Pod", "payment-api-x"))
    assert veto is not None and "payments/Deployment/payment-api" in veto.message


async def test_history_that_cannot_be_read_blocks_nothing_and_says_so() -> None:
    history = build_embedded_history(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens
    gate = HistoryCheck(history)
    candidate = Candidate(incident(), Observed(), Declarations(), OOM, None, {})
    try:
        assert await gate(candidate) is None
        assert await gate(candidate) is None  # read once: one warning
    finally:
        await history.close()
    (note,) = gate.notes
    assert "payments/Deployment/payment-api" in note and "did not consider" in note


async def test_the_tool_caps_its_entries_and_compares_the_spec_read() -> None:
    history = build_embedded_history(None)
    for number in range(15):
        await history.record_outcome(
            outcome(f"rr-{number}", HOUR + number, pre_spec_hash=spec_hash(BEFORE))
        )
    observed = Observed()
    record_object(observed, 
        {"kind": "Deployment", "metadata": {"namespace": "payments", "name": "payment-api"},
         "spec": BEFORE}
    )  # fmt: skip
    tool = GetRemediationHistory(history, max_entries=10)
    args = GetRemediationHistoryArgs(kind="Deployment", namespace="payments", name="payment-api")
    answer = await tool.run(args, ToolContext(timeout=2.0, observed=observed))
    data = answer.payload["history_data"]
    assert len(data["recent"]) == 10 and data["recent_omitted"] == 5
    assert data["recent"][0]["remediation_id"] == "rr-0"  # newest first
    assert data["regression_detected"] is True
    assert data["recent"][0]["spec_now_matches"] == "preRemediation"
    assert data["current_spec_hash"] == spec_hash(BEFORE)
    unread = await tool.run(args, ToolContext(timeout=2.0, observed=Observed()))
    assert unread.payload["history_data"]["current_spec_hash"].startswith("unknown")


async def test_a_decider_that_stood_down_for_the_history_gets_its_reason() -> None:
    from hapi_grpc.domain.catalog import SearchHit
    from hapi_grpc.domain.history.gate import stood_down_because
    from hapi_grpc.domain.result import AlternativeWorkflow, AnalysisResult

    history = build_embedded_history(None)
    await history.record_outcome(outcome("rr-1", HOUR, Outcome.FAILED, failure_reason="Forbidden"))
    hits = {
        wid: SearchHit(workflow_id=wid, version="1", confidence=0.9, read_only=wid != OOM)
        for wid in ("diagnostics-v1", OOM)
    }
    result = AnalysisResult(
        remediation_id="rr-now",
        needs_human_review=True,
        human_review_reason=HumanReviewReason.PRECONDITION_NOT_MET,
        alternative_workflows=[AlternativeWorkflow("diagnostics-v1", 0.9),
                               AlternativeWorkflow(OOM, 0.8)],
    )  # fmt: skip
    found = await stood_down_because(HistoryCheck(history), incident(), Observed(), result, hits)
    assert found is not None and found.reason is HumanReviewReason.REPEATS_FAILED_REMEDIATION
    # A reason of its own (the catalog was down, the budget ran out) is kept.
    result.human_review_reason = HumanReviewReason.DATA_STORAGE_UNAVAILABLE
    assert (
        await stood_down_because(HistoryCheck(history), incident(), Observed(), result, hits)
        is None
    )


async def _stalled_redis() -> tuple[asyncio.Server, int]:
    """A Redis address that accepts connections and never answers a command."""

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client goes away
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_a_stalled_history_store_is_given_up_within_the_callers_budget() -> None:
    # The Redis client's own socket timeout (0.5 s) is longer than the budget:
    # only the history's operation bound ends the read in time.
    server, port = await _stalled_redis()
    history = build_embedded_history(f"redis://127.0.0.1:{port}/0")
    try:
        started = time.monotonic()
        with budget_scope(Budget.from_timeout(0.2)), pytest.raises(HistoryUnavailableError):
            await history.context(TARGET, "")
        assert time.monotonic() - started < 0.4
    finally:
        await history.close()
        server.close()


class _NeverAnswers:
    """A history source that never answers (a read stuck below every client timeout)."""

    async def context(self, *_: Any) -> Any:
        await asyncio.Event().wait()


async def test_the_checks_own_read_bound_ends_a_read_that_never_answers() -> None:
    gate = HistoryCheck(_NeverAnswers())  # type: ignore[arg-type]
    candidate = Candidate(incident(), Observed(), Declarations(), OOM, None, {})
    started = time.monotonic()
    with budget_scope(Budget.from_timeout(0.2)):
        assert await asyncio.wait_for(gate(candidate), 5.0) is None
    assert time.monotonic() - started < 0.4
    (note,) = gate.notes
    assert "could not be read (TimeoutError)" in note


async def test_a_spent_budget_sends_no_history_operation_and_leaves_none_pending() -> None:
    history = build_embedded_history(None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with budget_scope(Budget.from_timeout(0.0)), pytest.raises(BudgetExhaustedError):
            await history.context(TARGET, "")
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
