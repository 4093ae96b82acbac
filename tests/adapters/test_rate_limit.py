"""The remediation rate limit: per target and window, in memory and shared through Redis."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from hapi_grpc.adapters.remediation_counter import (
    MemoryRemediationCounter,
    RedisRemediationCounter,
    build_remediation_counter,
)
from hapi_grpc.domain.policy.enforce import POLICY_REVIEW_REASON, DecisionPolicy, Limit
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason
from tests.domain.policy.helpers import StaticSource, incident, policy, selected
from tests.fakes.clock import ManualClock
from tests.fakes.redis_server import RedisServer, running_redis

RATE = """
rules:
  - name: restarts-per-target
    action: rate_limit
    limit: 3
    window: 1h
"""


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path) as server:
        yield server


async def decide(enforcer: DecisionPolicy, **result_args: object) -> AnalysisResult:
    result = selected(**result_args)  # type: ignore[arg-type]
    await enforcer.apply(incident(), result)
    return result


async def test_at_most_n_automated_decisions_per_target_per_window() -> None:
    clock = ManualClock()
    enforcer = DecisionPolicy(StaticSource(policy(RATE)), MemoryRemediationCounter(clock=clock))
    outcomes = [await decide(enforcer) for _ in range(5)]
    assert [r.needs_human_review for r in outcomes] == [False, False, False, True, True]
    limited = outcomes[3]
    assert limited.human_review_reason is POLICY_REVIEW_REASON
    assert limited.selected_workflow is not None
    assert limited.warnings == [
        "Policy rule 'restarts-per-target' allows at most 3 automated decision(s) per 1h for"
        " 'payments/Deployment/payment-api', and that many were already made: review."
    ]
    clock.advance(3599)
    assert (await decide(enforcer)).needs_human_review
    clock.advance(2)  # the first three left the window
    assert not (await decide(enforcer)).needs_human_review


async def test_each_target_has_its_own_count() -> None:
    text = RATE.replace("window: 1h", "window: 1h\n    key: params.NAMESPACE + '/' + params.NAME")
    enforcer = DecisionPolicy(StaticSource(policy(text)), MemoryRemediationCounter())
    for _ in range(3):
        assert not (
            await decide(enforcer, params={"NAMESPACE": "a", "NAME": "x"})
        ).needs_human_review
    assert (await decide(enforcer, params={"NAMESPACE": "a", "NAME": "x"})).needs_human_review
    assert not (await decide(enforcer, params={"NAMESPACE": "a", "NAME": "y"})).needs_human_review


async def test_decisions_under_review_are_not_counted() -> None:
    enforcer = DecisionPolicy(StaticSource(policy(RATE)), MemoryRemediationCounter())
    for _ in range(5):
        assert (await decide(enforcer, review=True)).warnings == []
    assert not (await decide(enforcer)).needs_human_review


async def test_a_decision_refused_by_a_later_limit_is_not_counted_by_an_earlier_one() -> None:
    text = RATE + (
        "  - name: one-per-namespace\n    action: rate_limit\n    limit: 1\n    window: 1h\n"
        "    key: target.namespace\n"
    )
    counter = MemoryRemediationCounter()
    enforcer = DecisionPolicy(StaticSource(policy(text)), counter)
    assert not (await decide(enforcer)).needs_human_review  # 1 of 3, 1 of 1
    for _ in range(4):
        refused = await decide(enforcer)
        assert "one-per-namespace" in refused.warnings[0]
    # Only the automated decision counts against the first rule: two remain.
    first = [Limit("restarts-per-target", "payments/Deployment/payment-api", 3, 3600)]
    assert await counter.admit(first) is None
    assert await counter.admit(first) is None
    assert await counter.admit(first) == 0


async def test_memory_counter_is_bounded() -> None:
    counter = MemoryRemediationCounter(max_keys=2)
    for key in ("a", "b", "c"):
        assert await counter.admit([Limit("r", key, 1, 60)]) is None
    assert len(counter._logs) == 2


async def test_memory_counter_is_bounded_in_bytes_by_what_its_logs_hold() -> None:
    counter = MemoryRemediationCounter(max_bytes=20_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(200):  # 200 keys of 10 decisions each
            for _ in range(10):
                assert (
                    await counter.admit([Limit("per-target", f"ns/Deployment/app-{i}", 50, 60)])
                    is None
                )
        spent = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert counter._bytes <= 20_000 and 10 <= len(counter._logs) <= 25
    assert spent <= counter._bytes + 4_096  # what is counted covers what the logs hold
    # The least recently used keys were forgotten; the latest still count.
    assert ("per-target", "ns/Deployment/app-199") in counter._logs


async def test_two_replicas_share_the_count_through_redis(redis_server: RedisServer) -> None:
    replicas = [
        DecisionPolicy(StaticSource(policy(RATE)), RedisRemediationCounter(redis_server.url))
        for _ in range(2)
    ]
    try:
        outcomes = [await decide(replicas[i % 2]) for i in range(6)]
        assert [r.needs_human_review for r in outcomes] == [False] * 3 + [True] * 3
        assert "restarts-per-target" in outcomes[3].warnings[0]
    finally:
        for replica in replicas:
            await replica.close()


async def test_concurrent_decisions_on_two_replicas_admit_exactly_the_limit(
    redis_server: RedisServer,
) -> None:
    replicas = [
        DecisionPolicy(StaticSource(policy(RATE)), RedisRemediationCounter(redis_server.url))
        for _ in range(2)
    ]
    try:
        outcomes = await asyncio.gather(*(decide(replicas[i % 2]) for i in range(20)))
        assert sum(not r.needs_human_review for r in outcomes) == 3
    finally:
        for replica in replicas:
            await replica.close()


async def test_the_redis_window_slides(redis_server: RedisServer) -> None:
    counter = RedisRemediationCounter(redis_server.url)
    short = [Limit("r", "k", 2, 1.0)]
    try:
        assert await counter.admit(short) is None
        assert await counter.admit(short) is None
        assert await counter.admit(short) == 0
        await asyncio.sleep(1.05)
        assert await counter.admit(short) is None
    finally:
        await counter.close()


async def test_redis_counts_under_every_limit_or_none(redis_server: RedisServer) -> None:
    counter = RedisRemediationCounter(redis_server.url)
    wide, narrow = Limit("wide", "k", 5, 60), Limit("narrow", "k", 1, 60)
    try:
        assert await counter.admit([wide, narrow]) is None
        assert await counter.admit([wide, narrow]) == 1  # narrow is full: wide not counted
        for _ in range(4):  # had the refused decision counted, only three would fit
            assert await counter.admit([wide]) is None
        assert await counter.admit([wide]) == 0
    finally:
        await counter.close()


async def test_an_unreachable_counter_sends_the_decision_to_review(tmp_path: Path) -> None:
    with running_redis(tmp_path) as server:
        url = server.url
    counter = build_remediation_counter(url)  # nothing listens there any more
    enforcer = DecisionPolicy(StaticSource(policy(RATE)), counter)
    try:
        started = time.monotonic()
        result = await decide(enforcer)
        assert time.monotonic() - started < 2.0
    finally:
        await enforcer.close()
    assert result.needs_human_review
    assert result.human_review_reason is not HumanReviewReason.BUDGET_EXHAUSTED
    assert result.warnings == [
        "Policy rule 'restarts-per-target' could not count automated decisions"
        " (counter unavailable)."
    ]
