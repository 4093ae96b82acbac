"""Backoff, Retry-After parsing, and the shared attempt runner against a real HTTP server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.adapters.http.retry import RetryPolicy, full_jitter, parse_retry_after
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.catalog import SearchQuery
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError, CatalogUnavailableError
from tests.adapters.conftest import FakeDataStorage

QUERY = SearchQuery(query="OOMKilled critical", top_k=3)


def upper(low: float, high: float) -> float:
    return high


@pytest.mark.parametrize(
    ("attempt", "expected"), [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (500, 1.0)]
)
def test_full_jitter_grows_exponentially_up_to_the_cap(attempt: int, expected: float) -> None:
    assert full_jitter(attempt, 0.1, 1.0, rng=upper) == pytest.approx(expected)


def test_full_jitter_draws_from_zero() -> None:
    seen: list[tuple[float, float]] = []

    def record(low: float, high: float) -> float:
        seen.append((low, high))
        return low

    assert full_jitter(3, 0.1, 1.0, rng=record) == 0.0
    assert seen == [(0.0, pytest.approx(0.4))]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("3", 3.0),
        (" 0.5 ", 0.5),
        ("-4", 0.0),
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after(header, now=lambda: now) == expected


# -- the shared attempt runner, against the fake Data Storage -------------------------------


def test_each_adapter_states_its_policy() -> None:
    """The differences between the two HTTP adapters are fields, not two loops."""
    ds = DataStorageClient("http://127.0.0.1:1", request_timeout=2.0, max_retries=3)
    llm = OpenAICompatibleProvider("http://127.0.0.1:1/v1", "m", max_retries=2)
    assert ds.http.retry == RetryPolicy(
        attempt_timeout=2.0,
        max_retries=3,
        backoff_base=0.1,
        backoff_cap=2.0,
        retry_after_cap=30.0,
        min_attempt_seconds=0.01,
    )
    assert llm.policy == RetryPolicy(
        attempt_timeout=120.0,
        max_retries=2,
        backoff_base=0.5,
        backoff_cap=30.0,
        retry_after_cap=60.0,
        min_attempt_seconds=0.1,
        retry_timeouts_in_full=True,
    )


def test_backoff_without_jitter_is_the_upper_bound() -> None:
    policy = RetryPolicy(attempt_timeout=1.0, backoff_base=0.1, backoff_cap=0.3, jitter=False)
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == pytest.approx([0.1, 0.2, 0.3, 0.3])


def test_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(attempt_timeout=1.0, max_retries=11)
    with pytest.raises(ValueError, match="attempt_timeout"):
        RetryPolicy(attempt_timeout=0)


@pytest.fixture
async def catalog(ds: FakeDataStorage) -> AsyncIterator[DataStorageCatalog]:
    made = DataStorageCatalog(
        DataStorageClient(
            ds.url, request_timeout=0.6, max_retries=3, backoff_base=0.01, backoff_max=0.02
        )
    )
    yield made
    await made.close()


async def test_retry_after_is_a_floor_over_the_backoff(
    ds: FakeDataStorage, catalog: DataStorageCatalog
) -> None:
    ds.script("search", ds.status(503, headers={"Retry-After": "0.4"}))
    await catalog.search(QUERY)
    first, second = ds.requests
    assert 0.4 <= second.at - first.at < 1.5


async def test_retry_after_beyond_the_cap_gives_up_even_without_a_deadline(
    ds: FakeDataStorage, catalog: DataStorageCatalog
) -> None:
    ds.script("search", ds.status(429, headers={"Retry-After": "45"}))
    started = time.monotonic()
    with pytest.raises(CatalogUnavailableError, match=r"Retry-After 45s is longer than the 30s"):
        await catalog.search(QUERY)
    assert time.monotonic() - started < 0.5
    assert ds.count() == 1


async def test_each_attempt_is_clipped_to_what_is_left_of_the_budget(
    ds: FakeDataStorage, catalog: DataStorageCatalog
) -> None:
    # 0.6 s per attempt, 1.0 s of budget: the first attempt times out on its
    # own and is retried; the second gets only the ~0.4 s left and ends with
    # the budget, not 0.6 s later.
    ds.script("search", ds.slow(5.0), ds.slow(5.0), ds.slow(5.0))
    started = time.monotonic()
    with budget_scope(Budget.from_timeout(1.0)), pytest.raises(BudgetExhaustedError):
        await catalog.search(QUERY)
    elapsed = time.monotonic() - started
    assert 0.95 <= elapsed < 1.4
    assert ds.count() == 2


async def test_no_attempt_starts_without_the_minimum_attempt_time(
    ds: FakeDataStorage, catalog: DataStorageCatalog
) -> None:
    with budget_scope(Budget.from_timeout(0.005)), pytest.raises(BudgetExhaustedError):
        await catalog.search(QUERY)
    assert ds.requests == []


async def test_cancellation_during_a_retry_wait_stops_at_once(
    ds: FakeDataStorage, catalog: DataStorageCatalog
) -> None:
    ds.script("search", ds.status(503, headers={"Retry-After": "20"}))
    task = asyncio.create_task(catalog.search(QUERY))
    for _ in range(200):
        if ds.count():
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # now sleeping before the retry
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.1)
    assert ds.count() == 1


async def test_the_connection_pool_bounds_requests_in_flight(ds: FakeDataStorage) -> None:
    catalog = DataStorageCatalog(DataStorageClient(ds.url, request_timeout=5.0, max_connections=2))
    ds.script("search", *[ds.slow(0.3) for _ in range(4)])
    try:
        await asyncio.gather(*[catalog.search(QUERY) for _ in range(4)])
    finally:
        await catalog.close()
    arrivals = sorted(r.at for r in ds.requests)
    assert len(arrivals) == 4
    # Two at once; the other two only after the first ones answered.
    assert arrivals[1] - arrivals[0] < 0.2
    assert arrivals[2] - arrivals[0] >= 0.25
