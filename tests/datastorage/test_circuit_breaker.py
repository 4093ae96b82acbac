"""RateCircuitBreaker policy (injected clock) and its use by the Data Storage client."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY

from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.domain.catalog import SearchQuery
from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    CatalogUnavailableError,
    InvalidRequestError,
    WorkflowNotFoundError,
)
from tests.fakes.clock import ManualClock

from .conftest import FakeDataStorage


class Boom(Exception):
    pass


def make(clock: ManualClock, name: str = "test", **kwargs: Any) -> RateCircuitBreaker:
    return RateCircuitBreaker(name, clock=clock, **kwargs)


async def ok() -> str:
    return "ok"


async def fail() -> str:
    raise Boom("down")


async def run(
    breaker: RateCircuitBreaker, fn: Callable[[], Awaitable[str]], times: int = 1
) -> None:
    for _ in range(times):
        try:
            await breaker.call(fn)
        except Boom:
            pass


def gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value("hapi_datastorage_circuit_breaker_state", {"breaker": name})


def transitions(name: str, state: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "hapi_datastorage_circuit_breaker_transitions_total", {"breaker": name, "state": state}
        )
        or 0.0
    )


async def test_below_the_minimum_calls_it_stays_closed() -> None:
    breaker = make(ManualClock())
    await run(breaker, fail, 9)
    assert breaker.state == "closed"
    assert breaker.window_counts() == (9, 9)


async def test_opens_at_exactly_half_failures_over_the_minimum() -> None:
    breaker = make(ManualClock())
    await run(breaker, ok, 6)
    await run(breaker, fail, 5)
    assert breaker.state == "closed"  # 5 of 11 < 50 %
    await run(breaker, fail)
    assert breaker.state == "open"  # 6 of 12 = 50 %


async def test_opens_on_the_tenth_call_at_fifty_percent() -> None:
    breaker = make(ManualClock())
    await run(breaker, ok, 5)
    await run(breaker, fail, 4)
    assert breaker.state == "closed"  # 9 calls: below the minimum
    await run(breaker, fail)
    assert breaker.state == "open"


async def test_success_does_not_open_it() -> None:
    breaker = make(ManualClock(), min_calls=2)
    await run(breaker, fail)
    await run(breaker, ok)  # 1 of 2 failed, but a success never trips
    assert breaker.state == "closed"


async def test_threshold_is_configurable_without_float_surprises() -> None:
    breaker = make(ManualClock(), failure_ratio=0.3)
    await run(breaker, ok, 7)
    await run(breaker, fail, 3)  # exactly 30 %
    assert breaker.state == "open"


async def test_open_fails_fast_without_calling() -> None:
    breaker = make(ManualClock(), min_calls=2)
    await run(breaker, fail, 2)
    calls = 0

    async def counted() -> str:
        nonlocal calls
        calls += 1
        return "ok"

    for _ in range(5):
        with pytest.raises(CatalogUnavailableError, match="circuit breaker open"):
            await breaker.call(counted)
    assert calls == 0


async def test_half_open_lets_one_probe_through_and_closes_on_success() -> None:
    clock = ManualClock()
    breaker = make(clock, min_calls=2, recovery_timeout=30)
    await run(breaker, fail, 2)
    clock.advance(29.9)
    with pytest.raises(CatalogUnavailableError):
        await breaker.call(ok)
    clock.advance(0.1)
    assert breaker.state == "half_open"

    release = asyncio.Event()

    async def slow_probe() -> str:
        await release.wait()
        return "probed"

    probe = asyncio.create_task(breaker.call(slow_probe))
    await asyncio.sleep(0)
    for _ in range(3):  # concurrent callers fail fast while the probe runs
        with pytest.raises(CatalogUnavailableError, match="probe"):
            await breaker.call(ok)
    release.set()
    assert await probe == "probed"
    assert breaker.state == "closed"
    assert breaker.window_counts() == (0, 0)  # a fresh window after recovery
    assert await breaker.call(ok) == "ok"


async def test_failed_probe_reopens() -> None:
    clock = ManualClock()
    breaker = make(clock, min_calls=2, recovery_timeout=30)
    await run(breaker, fail, 2)
    clock.advance(30)
    await run(breaker, fail)
    assert breaker.state == "open"
    clock.advance(29)
    with pytest.raises(CatalogUnavailableError):
        await breaker.call(ok)
    clock.advance(1)
    assert await breaker.call(ok) == "ok"
    assert breaker.state == "closed"


async def test_half_open_probe_limit_is_configurable() -> None:
    clock = ManualClock()
    breaker = make(clock, min_calls=2, half_open_max_calls=2)
    await run(breaker, fail, 2)
    clock.advance(30)
    release = asyncio.Event()

    async def held() -> str:
        await release.wait()
        return "ok"

    probes = [asyncio.create_task(breaker.call(held)) for _ in range(2)]
    await asyncio.sleep(0)
    with pytest.raises(CatalogUnavailableError):
        await breaker.call(ok)
    release.set()
    assert await asyncio.gather(*probes) == ["ok", "ok"]
    assert breaker.state == "closed"


async def test_cancelled_probe_frees_its_slot_and_keeps_half_open() -> None:
    clock = ManualClock()
    breaker = make(clock, min_calls=2)
    await run(breaker, fail, 2)
    clock.advance(30)

    probe = asyncio.create_task(breaker.call(lambda: asyncio.sleep(10, "late")))
    await asyncio.sleep(0)
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    assert breaker.state == "half_open"
    assert await breaker.call(ok) == "ok"
    assert breaker.state == "closed"


async def test_failures_older_than_the_window_drop_out() -> None:
    clock = ManualClock()
    breaker = make(clock, window_seconds=300)
    await run(breaker, fail, 9)
    clock.advance(300 + 300 / 60)  # the window plus one bucket
    assert breaker.window_counts() == (0, 0)
    await run(breaker, fail)
    assert breaker.state == "closed"  # 1 call in the window, not 10


async def test_failures_inside_the_window_still_count() -> None:
    clock = ManualClock()
    breaker = make(clock, window_seconds=300)
    await run(breaker, fail, 5)
    clock.advance(290)
    await run(breaker, ok, 4)
    assert breaker.state == "closed"
    await run(breaker, fail)  # 6 of 10 within 300 s
    assert breaker.state == "open"


@pytest.mark.parametrize(
    "exc",
    [BudgetExhaustedError("deadline"), InvalidRequestError("bad id")],
)
async def test_own_deadline_and_refused_requests_are_not_counted(exc: Exception) -> None:
    breaker = make(ManualClock(), min_calls=1)

    async def raises() -> str:
        raise exc

    for _ in range(3):
        with pytest.raises(type(exc)):
            await breaker.call(raises)
    assert breaker.window_counts() == (0, 0)
    assert breaker.state == "closed"


async def test_cancellation_is_not_counted() -> None:
    breaker = make(ManualClock(), min_calls=1)
    task = asyncio.create_task(breaker.call(lambda: asyncio.sleep(10, "late")))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert breaker.window_counts() == (0, 0)


async def test_not_found_counts_as_a_healthy_answer() -> None:
    breaker = make(ManualClock(), min_calls=1)

    async def missing() -> str:
        raise WorkflowNotFoundError("x")

    with pytest.raises(WorkflowNotFoundError):
        await breaker.call(missing)
    assert breaker.window_counts() == (1, 0)


async def test_outcomes_of_calls_admitted_before_opening_are_ignored() -> None:
    clock = ManualClock()
    breaker = make(clock, min_calls=2)
    release_straggler = asyncio.Event()
    release_probe = asyncio.Event()

    async def late_failure() -> str:
        await release_straggler.wait()
        raise Boom("late")

    async def probe_call() -> str:
        await release_probe.wait()
        return "ok"

    straggler = asyncio.create_task(breaker.call(late_failure))
    await asyncio.sleep(0)
    await run(breaker, fail, 2)
    assert breaker.state == "open"
    clock.advance(30)
    probe = asyncio.create_task(breaker.call(probe_call))
    await asyncio.sleep(0)
    release_straggler.set()
    with pytest.raises(Boom):
        await straggler
    assert breaker.state == "half_open"  # only the probe decides
    release_probe.set()
    await probe
    assert breaker.state == "closed"


async def test_state_changes_are_exported_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    name = "export-test"
    before = {s: transitions(name, s) for s in ("open", "half_open", "closed")}
    breaker = make(clock, name=name, min_calls=2)
    assert gauge(name) == 0
    with caplog.at_level(logging.INFO, logger="hapi_grpc.adapters.circuit_breaker"):
        await run(breaker, fail, 2)
        assert gauge(name) == 2
        clock.advance(30)
        release = asyncio.Event()

        async def held() -> str:
            await release.wait()
            return "ok"

        probe = asyncio.create_task(breaker.call(held))
        await asyncio.sleep(0)
        assert gauge(name) == 1
        release.set()
        await probe
        assert gauge(name) == 0

    assert {s: transitions(name, s) - before[s] for s in before} == {
        "open": 1,
        "half_open": 1,
        "closed": 1,
    }
    records = [r for r in caplog.records if r.name == "hapi_grpc.adapters.circuit_breaker"]
    assert [(r.levelno, r.getMessage().split(":")[0]) for r in records] == [
        (logging.WARNING, f"circuit breaker {name} is now open"),
        (logging.INFO, f"circuit breaker {name} is now half_open"),
        (logging.INFO, f"circuit breaker {name} is now closed"),
    ]
    assert "2 of 2 calls failed within 300s" in records[0].getMessage()


def test_rejects_nonsense_settings() -> None:
    for kwargs in (
        {"failure_ratio": 0},
        {"failure_ratio": 1.5},
        {"min_calls": 0},
        {"window_seconds": 0},
        {"recovery_timeout": 0},
        {"half_open_max_calls": 0},
    ):
        with pytest.raises(ValueError):
            RateCircuitBreaker(**kwargs)


# -- with the Data Storage client -------------------------------------------------------------

QUERY = SearchQuery(query="OOMKilled critical")


async def test_open_breaker_sends_no_requests(ds: FakeDataStorage) -> None:
    clock = ManualClock()
    breaker = RateCircuitBreaker("ds-open", min_calls=2, clock=clock)
    catalog = DataStorageCatalog(DataStorageClient(ds.url, max_retries=0, breaker=breaker))
    try:
        ds.script("search", ds.status(500), ds.status(500))
        for _ in range(2):
            with pytest.raises(CatalogUnavailableError, match="HTTP 500"):
                await catalog.search(QUERY)
        assert breaker.state == "open"
        sent = ds.count()
        for _ in range(5):
            with pytest.raises(CatalogUnavailableError, match="circuit breaker open"):
                await catalog.search(QUERY)
        assert ds.count() == sent

        clock.advance(30)  # the probe goes out, succeeds, and closes the breaker
        assert (await catalog.search(QUERY)).total_results == 1
        assert ds.count() == sent + 1
        assert breaker.state == "closed"
    finally:
        await catalog.close()


async def test_retries_of_one_call_count_once(ds: FakeDataStorage) -> None:
    breaker = RateCircuitBreaker("ds-once", min_calls=10, clock=ManualClock())
    catalog = DataStorageCatalog(
        DataStorageClient(
            ds.url, max_retries=2, backoff_base=0.001, backoff_max=0.002, breaker=breaker
        )
    )
    try:
        ds.script("search", *[ds.status(503) for _ in range(3)])
        with pytest.raises(CatalogUnavailableError):
            await catalog.search(QUERY)
        assert ds.count() == 3
        assert breaker.window_counts() == (1, 1)
    finally:
        await catalog.close()
