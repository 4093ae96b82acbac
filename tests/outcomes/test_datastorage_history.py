"""The Data Storage history adapter against a real HTTP server speaking the
contract, with faults injected: retried 5xx, refused 400, slow answers within
the caller's deadline, malformed bodies, the breaker, the short cache, and
outcomes recorded here added to Data Storage's chain."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.adapters.history.datastorage import MAX_CACHE_BYTES, DataStorageHistory
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError, HistoryUnavailableError
from hapi_grpc.domain.execution import ExecutedWorkflow, ExecutionFailure
from hapi_grpc.domain.history import HashMatch, Outcome, OutcomeReport, spec_hash
from hapi_grpc.domain.history.gate import history_veto
from hapi_grpc.domain.result import TargetResource
from tests.outcomes.history_server import HistoryServer

TARGET = TargetResource("payments", "Deployment", "payment-api", "apps")
NOW_SPEC = spec_hash({"memory": "512Mi"})
FIXED_SPEC = spec_hash({"memory": "1Gi"})


def entry(uid: str, hours_ago: float, **fields: object) -> dict[str, object]:
    at = datetime.now(UTC) - timedelta(hours=hours_ago)
    return {
        "remediationUID": uid,
        "completedAt": at.isoformat().replace("+00:00", "Z"),
        "signalType": "OOMKilled",
        "actionType": "IncreaseMemoryLimits",
        "outcome": "Success",
        "effectivenessScore": 0.8,
        "signalResolved": True,
        "preRemediationSpecHash": NOW_SPEC,
        "postRemediationSpecHash": FIXED_SPEC,
        "healthChecks": {"podRunning": True, "oomKilled": False},
        **fields,
    }


@pytest.fixture
async def ds() -> AsyncIterator[HistoryServer]:
    server = HistoryServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def client(ds: HistoryServer, **options: object) -> DataStorageHistory:
    settings: dict[str, object] = {
        "request_timeout": 0.5,
        "max_retries": 2,
        "backoff_base": 0.01,
        "backoff_max": 0.02,
        **options,
    }
    cache_ttl = settings.pop("cache_ttl", 0.0)
    return DataStorageHistory(
        DataStorageClient(ds.url, **settings),  # type: ignore[arg-type]
        EmbeddedHistory(MemoryHistoryBackend()),
        cache_ttl=cache_ttl,  # type: ignore[arg-type]
    )


async def test_the_context_is_read_in_the_contracts_shape(ds: HistoryServer) -> None:
    ds.entries = [entry("rr-old", 3), entry("rr-new", 1, outcome="Failed", effectivenessScore=None)]
    ds.regression = True
    history = client(ds)
    try:
        context = await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    (query,) = ds.queries
    assert query == {
        "targetKind": "Deployment",
        "targetName": "payment-api",
        "targetNamespace": "payments",
        "currentSpecHash": NOW_SPEC,
        "tier1Window": "24h",
        "tier2Window": "2160h",
    }
    assert context.target_resource == "payments/Deployment/payment-api"
    assert [e.remediation_uid for e in context.tier1] == ["rr-old", "rr-new"]
    assert [e.outcome for e in context.tier1] == [Outcome.SUCCESS, Outcome.FAILED]
    assert context.tier1[0].effectiveness_score == 0.8
    assert context.tier1[1].effectiveness_score is None
    assert context.tier1[0].hash_match is HashMatch.PRE
    assert context.regression_detected


async def test_a_500_is_retried_and_an_answer_follows(ds: HistoryServer) -> None:
    ds.entries = [entry("rr-1", 1)]
    ds.faults.extend(["500", "500"])
    history = client(ds)
    try:
        context = await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    assert len(ds.queries) == 3
    assert [e.remediation_uid for e in context.tier1] == ["rr-1"]


@pytest.mark.parametrize("fault", ["malformed", "html"])
async def test_a_malformed_answer_is_unavailable_and_not_retried(
    ds: HistoryServer, fault: str
) -> None:
    ds.faults.append(fault)
    history = client(ds)
    try:
        with pytest.raises(HistoryUnavailableError, match="response"):
            await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    assert len(ds.queries) == 1


async def test_a_400_problem_is_unavailable_with_its_title_and_not_retried(
    ds: HistoryServer,
) -> None:
    ds.faults.append("400")
    history = client(ds)
    try:
        with pytest.raises(HistoryUnavailableError, match="HTTP 400: missing parameter"):
            await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    assert len(ds.queries) == 1


async def test_a_slow_answer_ends_within_the_callers_deadline(ds: HistoryServer) -> None:
    ds.faults.extend(["slow"] * 5)
    history = client(ds, request_timeout=2.0)
    started = time.monotonic()
    try:
        with (
            budget_scope(Budget.from_timeout(0.3)),
            pytest.raises((BudgetExhaustedError, HistoryUnavailableError)),
        ):
            await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    assert time.monotonic() - started < 0.6


async def test_the_breaker_opens_and_data_storage_is_not_called(ds: HistoryServer) -> None:
    breaker = RateCircuitBreaker("history-test", min_calls=2, failure_ratio=0.5)
    history = client(ds, max_retries=0, breaker=breaker)
    ds.faults.extend(["500"] * 2)
    try:
        for _ in range(2):
            with pytest.raises(HistoryUnavailableError):
                await history.context(TARGET, NOW_SPEC)
        with pytest.raises(HistoryUnavailableError, match="circuit breaker open"):
            await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    assert len(ds.queries) == 2


async def test_answers_are_reused_for_seconds_and_a_report_refreshes_them(
    ds: HistoryServer,
) -> None:
    ds.entries = [entry("rr-1", 1)]
    history = client(ds, cache_ttl=30.0)
    try:
        await history.context(TARGET, NOW_SPEC)
        await history.context(TARGET, NOW_SPEC)
        assert len(ds.queries) == 1
        report = OutcomeReport(
            "rr-local",
            1,
            TARGET,
            Outcome.FAILED,
            ExecutedWorkflow("oomkill-increase-memory-v1"),
            ExecutionFailure("Forbidden"),
            pre_spec_hash=NOW_SPEC,
        )
        other = TargetResource("payments", "Deployment", "ledger", "apps")
        await history.context(other, NOW_SPEC)
        assert len(ds.queries) == 2
        await history.record_outcome(report)
        context = await history.context(TARGET, NOW_SPEC)
        # A report refreshes its own target's answer, not every target's.
        await history.context(other, NOW_SPEC)
    finally:
        await history.close()
    assert len(ds.queries) == 3
    # Data Storage does not hold the local report: it is added to its chain.
    assert [e.remediation_uid for e in context.tier1] == ["rr-1", "rr-local"]
    assert context.tier1[1].failure_reason == "Forbidden"


async def test_effectiveness_is_read_and_404_means_not_assessed(ds: HistoryServer) -> None:
    ds.assessments["rr-1"] = {
        "correlation_id": "rr-1",
        "score": 0.72,
        "assessment_status": "Full",
        "hash_comparison": {
            "pre_remediation_spec_hash": NOW_SPEC,
            "post_remediation_spec_hash": FIXED_SPEC,
            "hash_match": "postRemediation",
        },
    }
    history = client(ds)
    try:
        found = await history.by_remediation_id("rr-1")
        missing = await history.by_remediation_id("rr-2")
    finally:
        await history.close()
    assert found.effectiveness is not None
    assert found.effectiveness.score == 0.72 and found.effectiveness.hash_match == "postRemediation"
    assert missing.effectiveness is None


async def test_the_settings_choose_where_history_is_read(ds: HistoryServer) -> None:
    from hapi_grpc.app import build_history
    from hapi_grpc.config import Settings

    embedded = build_history(Settings())
    assert isinstance(embedded, EmbeddedHistory)
    await embedded.close()
    remote = build_history(Settings(data_storage_url=ds.url, history_cache_seconds=0))
    assert isinstance(remote, DataStorageHistory)
    ds.entries = [entry("rr-ds", 2)]
    try:
        await remote.record_outcome(
            OutcomeReport(
                "rr-mine",
                1,
                TARGET,
                Outcome.SUCCESS,
                ExecutedWorkflow("wf"),
                post_spec_hash=NOW_SPEC,
            )
        )
        context = await remote.context(TARGET, NOW_SPEC)
    finally:
        await remote.close()
    assert [e.remediation_uid for e in context.tier1] == ["rr-ds", "rr-mine"]
    assert context.tier1[1].hash_match is HashMatch.POST
    off = build_history(Settings(data_storage_url=ds.url, history_data_storage=False))
    assert isinstance(off, EmbeddedHistory)
    await off.close()
    with pytest.raises(ValueError):
        Settings(history_cache_seconds=3600)


async def test_data_storage_text_in_a_history_veto_is_redacted(ds: HistoryServer) -> None:
    # Data Storage's ids and action types are outside text: the veto message
    # reaches the response's warnings, so a credential in them must not.
    token = "ghp_" + "A" * 36
    ds.entries = [entry(f"rr-{token}", 3, actionType=f"Restart-{token}")]
    history = client(ds)
    try:
        context = await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    veto = history_veto(context, "IncreaseMemoryLimits", "OOMKilled")
    assert veto is not None
    assert "the fix was undone" in veto.message
    assert "ghp_" not in veto.message
    assert "ghp_" not in veto.source


async def test_data_storages_hash_match_counts_when_it_sends_no_hashes(ds: HistoryServer) -> None:
    # The spec hashes of an entry are optional in the contract; its hashMatch
    # is Data Storage's own comparison with the current spec sent in the query.
    bare = entry("rr-undone", 2, hashMatch="preRemediation")
    del bare["preRemediationSpecHash"], bare["postRemediationSpecHash"]
    ds.entries = [bare]
    history = client(ds)
    try:
        context = await history.context(TARGET, NOW_SPEC)
    finally:
        await history.close()
    assert context.tier1[0].hash_match is HashMatch.PRE
    veto = history_veto(context, "IncreaseMemoryLimits", "OOMKilled")
    assert veto is not None and "the fix was undone" in veto.message


async def test_the_answers_kept_are_bounded_in_bytes(ds: HistoryServer) -> None:
    # 300 entries: about 100 kB of JSON per answer, 0.4 MB counted once parsed.
    ds.entries = [entry(f"rr-{i:04d}", 1 + i % 20) for i in range(300)]
    history = client(ds, cache_ttl=60.0)
    try:
        for i in range(40):  # 40 targets: twice what 8 MiB holds
            target = TargetResource("payments", "Deployment", f"app-{i}", "apps")
            await history.context(target, NOW_SPEC)
        kept_bytes, kept = history._cache_bytes, len(history._cache)
        first = TargetResource("payments", "Deployment", "app-0", "apps")
        asked = len(ds.queries)
        await history.context(first, NOW_SPEC)  # pushed out: asked again
    finally:
        await history.close()
    assert kept_bytes <= MAX_CACHE_BYTES and 10 <= kept < 40
    assert len(ds.queries) == asked + 1
