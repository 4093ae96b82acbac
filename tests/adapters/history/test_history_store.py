"""The history's shared rules (windows, hash matches, regression, the spec hash)
and the embedded store's bounds, in memory and in a real Redis."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hapi_grpc.adapters.history.backends import HistoryBackend, Limits
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.adapters.history.redis_store import RedisHistoryBackend
from hapi_grpc.domain.execution import ExecutedWorkflow
from hapi_grpc.domain.history import (
    HashMatch,
    HistoryEntry,
    Outcome,
    OutcomeReport,
    Windows,
    build_context,
    spec_hash,
)
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.domain.tenancy import Tenant
from tests.fakes.redis_server import running_redis

HOUR = 3600.0
NOW = 1_800_000_000.0
TARGET = TargetResource("payments", "Deployment", "payment-api")
TENANT = Tenant("payments")


def test_the_spec_hash_is_sha256_of_canonical_json() -> None:
    spec = {"b": [1, {"y": 2, "x": "é"}], "a": True}
    same = {"a": True, "b": [1, {"x": "é", "y": 2}]}
    assert spec_hash(spec) == spec_hash(same)
    # sha256 of '{"a":true,"b":[1,{"x":"é","y":2}]}' in UTF-8
    assert spec_hash(spec) == (
        "sha256:" + hashlib.sha256('{"a":true,"b":[1,{"x":"é","y":2}]}'.encode()).hexdigest()
    )
    assert spec_hash(spec) != spec_hash({"a": False, "b": [1, {"x": "é", "y": 2}]})


def test_windows_matches_and_regression() -> None:
    entries = [
        HistoryEntry("recent", NOW - 2 * HOUR, Outcome.SUCCESS, pre_spec_hash="sha256:a",
                     post_spec_hash="sha256:b"),
        HistoryEntry("older-match", NOW - 48 * HOUR, Outcome.SUCCESS, post_spec_hash="sha256:c"),
        HistoryEntry("older-other", NOW - 48 * HOUR, Outcome.FAILED, post_spec_hash="sha256:x"),
        HistoryEntry("ancient", NOW - 100 * 24 * HOUR, Outcome.SUCCESS, pre_spec_hash="sha256:c"),
    ]  # fmt: skip
    context = build_context("t", "sha256:c", entries, Windows(), NOW)
    assert [e.remediation_uid for e in context.tier1] == ["recent"]
    assert context.tier1[0].hash_match is HashMatch.NONE
    # Tier 2 holds only older remediations whose spec is the current one.
    assert [e.remediation_uid for e in context.tier2] == ["older-match"]
    assert not context.regression_detected  # "ancient" is outside both windows
    undone = build_context("t", "sha256:a", entries, Windows(), NOW)
    assert undone.regression_detected and undone.tier1[0].hash_match is HashMatch.PRE


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[HistoryBackend]:
    limits = Limits(ttl=90 * 24 * HOUR, max_per_target=3, max_total=5)
    if request.param == "memory":
        yield MemoryHistoryBackend(limits)
        return
    with running_redis(tmp_path) as redis:
        store = RedisHistoryBackend(redis.url, limits=limits)
        try:
            yield store
        finally:
            await store.close()


async def test_the_store_keeps_the_newest_per_target_and_in_all(backend: HistoryBackend) -> None:
    history = EmbeddedHistory(backend, clock=lambda: NOW)
    for i in range(5):
        await history.record_outcome(
            OutcomeReport(
                f"rr-{i}",
                1,
                TARGET,
                Outcome.SUCCESS,
                ExecutedWorkflow("wf"),
                completed_at=NOW - 10 + i,
            )
        )
    context = await history.context(TARGET, "")
    assert [e.remediation_uid for e in context.tier1] == ["rr-2", "rr-3", "rr-4"]
    other = TargetResource("payments", "Deployment", "other")
    for i in range(3):
        await history.record_outcome(
            OutcomeReport(
                f"rr-o{i}",
                1,
                other,
                Outcome.FAILED,
                ExecutedWorkflow("wf"),
                completed_at=NOW - 5 + i,
            )
        )
    # At most 5 in all: the oldest of every target went first.
    assert (await history.by_remediation_id("rr-0", TENANT)).outcomes == ()
    assert (await history.by_remediation_id("rr-2", TENANT)).outcomes == ()
    assert len((await history.context(other, "")).tier1) == 3
    assert [e.remediation_uid for e in (await history.context(TARGET, "")).tier1] == [
        "rr-3",
        "rr-4",
    ]


async def test_secret_named_parameters_are_not_kept(backend: HistoryBackend) -> None:
    history = EmbeddedHistory(backend, clock=lambda: NOW)
    params = {"MEMORY_LIMIT_NEW": "1Gi", "API_TOKEN": "tok-9f8e7d6c5b4a"}
    await history.record_outcome(
        OutcomeReport("rr-s", 1, TARGET, Outcome.SUCCESS, ExecutedWorkflow("wf", parameters=params))
    )
    (entry,) = (await history.by_remediation_id("rr-s", TENANT)).outcomes
    assert entry.parameters["MEMORY_LIMIT_NEW"] == "1Gi"
    assert "tok-9f8e7d6c5b4a" not in str(entry.parameters)


async def test_a_completion_time_in_the_future_counts_as_the_time_of_the_report(
    backend: HistoryBackend,
) -> None:
    # The contract allows any timestamp up to year 9999: a report dated ahead
    # must not sit in the one-day window (and refuse automation) for months.
    clock = [NOW]
    history = EmbeddedHistory(backend, clock=lambda: clock[0])
    await history.record_outcome(
        OutcomeReport(
            "rr-future",
            1,
            TARGET,
            Outcome.FAILED,
            ExecutedWorkflow("wf"),
            completed_at=NOW + 30 * 24 * HOUR,
        )
    )
    (entry,) = (await history.context(TARGET, "")).tier1
    assert entry.completed_at == NOW
    clock[0] = NOW + 25 * HOUR
    assert (await history.context(TARGET, "")).tier1 == ()


async def test_the_store_keeps_the_newest_decisions(backend: HistoryBackend) -> None:
    for i in range(8):
        await backend.put_decision(f"rr-d{i}", f"decision {i}")
    # At most 5 in all (max_total): the oldest went first.
    kept = [await backend.get_decision(f"rr-d{i}") for i in range(8)]
    assert kept == [None, None, None, "decision 3", "decision 4", "decision 5", "decision 6",
                    "decision 7"]  # fmt: skip


async def test_a_report_is_joined_only_with_the_decision_of_its_own_attempt() -> None:
    from hapi_grpc.domain.history import Decision

    history = EmbeddedHistory(MemoryHistoryBackend(Limits()), clock=lambda: NOW)

    def decision(confidence: float, recovery_attempt: int) -> Decision:
        return Decision(
            "rr-1", TARGET, "OOMKilled", "", "wf", "1", confidence, True, NOW, recovery_attempt
        )

    def report(attempt: int) -> OutcomeReport:
        executed = ExecutedWorkflow("wf", "1", {})
        return OutcomeReport("rr-1", attempt, TARGET, Outcome.FAILED, executed)

    await history.record_decision(decision(0.9, 0))
    await history.record_decision(decision(0.4, 1))  # the recovery replaced the first
    first = await history.record_outcome(report(1))
    # Attempt 1 carried out the first analysis, which is no longer kept: not 0.4.
    assert not first.decision_known and first.confidence is None
    second = await history.record_outcome(report(2))
    assert second.decision_known and second.confidence == 0.4
