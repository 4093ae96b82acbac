"""The embedded history's bounds, the same in memory and in a real Redis: lanes
per reporting caller and kind, order by the server's clock, the store-wide
bounds taken from the tenant holding the most, bytes, and what one record
costs in this process."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from hapi_grpc.adapters.history.backends import HistoryBackend, Limits
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.adapters.history.redis_store import RedisHistoryBackend
from hapi_grpc.domain.execution import ExecutedWorkflow, ExecutionFailure
from hapi_grpc.domain.history import Decision, Outcome, OutcomeReport
from hapi_grpc.domain.result import TargetResource
from tests.fakes.redis_server import running_redis

NOW = 1_800_000_000.0
TARGET = TargetResource("payments", "Deployment", "payment-api")
CONTROLLER = "system:serviceaccount:remediation:controller"
MAX_PARAMETERS = {f"P{i:02d}": "x" * 280 for i in range(55)}  # 16,000 bytes of JSON

Open = Callable[[Limits], HistoryBackend]


@pytest.fixture(params=["memory", "redis"])
async def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Open]:
    opened: list[HistoryBackend] = []
    if request.param == "memory":
        yield lambda limits: MemoryHistoryBackend(limits, clock=lambda: NOW)
        return
    with running_redis(tmp_path) as redis:

        def make(limits: Limits) -> HistoryBackend:
            backend = RedisHistoryBackend(redis.url, limits=limits, clock=lambda: NOW)
            opened.append(backend)
            return backend

        yield make
        for backend in opened:
            await backend.close()


def outcome(
    remediation_id: str,
    kind: Outcome = Outcome.SUCCESS,
    *,
    target: TargetResource = TARGET,
    caller: str = CONTROLLER,
    completed_at: float | None = None,
    parameters: dict[str, str] | None = None,
) -> OutcomeReport:
    executed = None if kind is Outcome.ESCALATED else ExecutedWorkflow("wf", "1", parameters or {})
    failure = ExecutionFailure("OOMKilled") if kind is Outcome.FAILED else None
    return OutcomeReport(
        remediation_id, 1, target, kind, executed, failure, completed_at=completed_at, caller=caller
    )


class Clock:
    """The server's clock, a second further at each reading."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


async def kept(history: EmbeddedHistory, target: TargetResource = TARGET) -> list[str]:
    return sorted(e.remediation_uid for e in (await history.context(target, "")).tier1)


async def test_one_callers_flood_keeps_another_callers_failure(open_backend: Open) -> None:
    history = EmbeddedHistory(open_backend(Limits(max_per_target=3)), clock=Clock())
    await history.record_outcome(outcome("rr-real", Outcome.FAILED))
    for i in range(10):
        await history.record_outcome(outcome(f"rr-x{i}", Outcome.FAILED, caller="intruder"))
    for i in range(10):
        await history.record_outcome(outcome(f"rr-d{i}", Outcome.ESCALATED))
    assert await kept(history) == [
        "rr-d7", "rr-d8", "rr-d9", "rr-real", "rr-x7", "rr-x8", "rr-x9"
    ]  # fmt: skip


async def test_a_lane_keeps_its_latest_arrivals_whatever_their_completion_time(
    open_backend: Open,
) -> None:
    history = EmbeddedHistory(open_backend(Limits(max_per_target=3)), clock=Clock())
    # Each report says it completed earlier than the one before.
    for i in range(6):
        await history.record_outcome(outcome(f"rr-{i}", completed_at=NOW - 60 * i))
    assert await kept(history) == ["rr-3", "rr-4", "rr-5"]


async def test_over_the_store_bound_the_tenant_holding_the_most_gives_way(
    open_backend: Open,
) -> None:
    history = EmbeddedHistory(open_backend(Limits(max_total=10)), clock=Clock())
    ours = [outcome("rr-a0", Outcome.FAILED), outcome("rr-a1"), outcome("rr-a2")]
    for report in ours:
        await history.record_outcome(report)
    flood = TargetResource("team-flood", "Deployment", "app")
    await history.record_outcome(outcome("rr-f-failed", Outcome.FAILED, target=flood))
    for i in range(20):
        await history.record_outcome(outcome(f"rr-f{i:02d}", target=flood))
    assert await kept(history) == ["rr-a0", "rr-a1", "rr-a2"]
    # The flood gave up its own oldest, its failure last.
    assert await kept(history, flood) == [
        "rr-f-failed", "rr-f14", "rr-f15", "rr-f16", "rr-f17", "rr-f18", "rr-f19"
    ]  # fmt: skip


async def test_the_byte_bound_holds_and_takes_from_the_largest(open_backend: Open) -> None:
    limits = Limits(max_bytes=400_000)
    history = EmbeddedHistory(open_backend(limits), clock=Clock())
    await history.record_outcome(outcome("rr-small", Outcome.FAILED))
    big = TargetResource("team-big", "Deployment", "app")
    for i in range(40):  # 40 records of ~18 kB: twice the bound
        await history.record_outcome(
            outcome(f"rr-big{i:02d}", target=big, parameters=MAX_PARAMETERS)
        )
    held = await kept(history, big)
    assert 18 <= len(held) <= 22 and held[-1] == "rr-big39"
    assert await kept(history) == ["rr-small"]


async def test_decisions_are_bounded_in_bytes_the_oldest_going_first(open_backend: Open) -> None:
    history = EmbeddedHistory(open_backend(Limits(max_decision_bytes=20_000)), clock=Clock())
    for i in range(40):
        decision = Decision(
            f"rr-{i:02d}", TARGET, "OOMKilled", "", "wf", "1", 0.9, True, NOW, caller=CONTROLLER
        )
        await history.record_decision(decision)
    tenant = decision.tenant
    found = [
        (await history.by_remediation_id(f"rr-{i:02d}", tenant)).decision is not None
        for i in range(40)
    ]
    assert found[-1] and not found[0]
    assert found == sorted(found)  # a run of the oldest went
    assert 10 <= sum(found) <= 20


async def test_both_backends_keep_the_same_records(tmp_path: Path) -> None:
    """One random workload (tenants, targets, kinds, floods) on both: the same
    records are kept."""
    limits = Limits(max_per_target=4, max_total=40, max_bytes=150_000)
    rng = random.Random(7)
    targets = [
        TargetResource(ns, "Deployment", name) for ns in ("a", "b", "c") for name in ("x", "y")
    ]
    reports = [
        outcome(
            f"rr-{i:03d}",
            rng.choice(list(Outcome)),
            target=rng.choice(targets),
            caller=rng.choice(["c1", "c2", ""]),
            parameters=MAX_PARAMETERS if rng.random() < 0.2 else None,
        )
        for i in range(300)
    ]
    results = []
    with running_redis(tmp_path) as redis:
        for backend in (
            MemoryHistoryBackend(limits, clock=lambda: NOW),
            RedisHistoryBackend(redis.url, limits=limits, clock=lambda: NOW),
        ):
            history = EmbeddedHistory(backend, clock=Clock())
            for report in reports:
                await history.record_outcome(report)
            results.append([await kept(history, target) for target in targets])
            await backend.close()
    assert results[0] == results[1]
    assert 10 < sum(map(len, results[0])) <= 40


async def test_what_one_record_costs_in_memory_is_within_what_is_counted() -> None:
    """The bytes counted per record bound what this process spends on it
    (docs/outcomes.md: about 2 kB for a typical record, 18 kB at most)."""
    backend = MemoryHistoryBackend(Limits(max_total=10**7, max_bytes=10**12))
    history = EmbeddedHistory(backend, clock=Clock())
    for parameters, at_most in (({"MEMORY_LIMIT_NEW": "1Gi"}, 2_400), (MAX_PARAMETERS, 18_500)):
        reports = [
            outcome(
                f"rr-{len(parameters)}-{i:05d}",
                Outcome.FAILED if i % 3 == 0 else Outcome.SUCCESS,
                target=TargetResource("payments", "Deployment", f"app-{i % 500}"),
                parameters=parameters,
            )
            for i in range(2000)
        ]
        counted = backend._ledger.bytes
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for report in reports:
                await history.record_outcome(report)
            spent = (tracemalloc.get_traced_memory()[0] - before) / len(reports)
        finally:
            tracemalloc.stop()
        per_record = (backend._ledger.bytes - counted) / len(reports)
        assert spent <= per_record <= at_most, (spent, per_record)
