"""CatalogCache (memory backend) on its own and in front of the Data Storage client."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pydantic import ValidationError

from hapi_grpc.adapters.cache import (
    ENTRY_OVERHEAD,
    CatalogCache,
    cache_key,
    search_key,
    workflow_key,
)
from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog, DataStorageHTTPError
from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.domain.catalog import SearchFilters, SearchQuery, SearchResult, WorkflowSchema
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError, CatalogUnavailableError
from tests.fakes.clock import ManualClock

from .conftest import WORKFLOW_ID, FakeDataStorage

BASE = "http://ds.example:8080"
QUERY = SearchQuery(
    query="OOMKilled critical",
    filters=SearchFilters(
        signal_type="OOMKilled",
        custom_labels={"team": ("name=payments",)},
        detected_labels={"gitOpsManaged": True},
    ),
)


def lookups(kind: str, result: str) -> float:
    return (
        REGISTRY.get_sample_value("hapi_cache_lookups_total", {"kind": kind, "result": result})
        or 0.0
    )


MakeCatalog = Callable[..., DataStorageCatalog]


@pytest.fixture
async def make_catalog(ds: FakeDataStorage) -> AsyncIterator[MakeCatalog]:
    made: list[tuple[DataStorageCatalog, CatalogCache]] = []

    def make(cache: CatalogCache | None = None, **overrides: Any) -> DataStorageCatalog:
        cache = cache or CatalogCache()
        options: dict[str, Any] = {"max_retries": 0, "request_timeout": 2.0}
        options.update(overrides)
        catalog = DataStorageCatalog(DataStorageClient(ds.url, **options), cache=cache)
        made.append((catalog, cache))
        return catalog

    yield make
    for catalog, cache in made:
        await catalog.close()
        await cache.close()


# -- keys --------------------------------------------------------------------------------


def test_key_ignores_the_remediation_id_only() -> None:
    assert search_key(BASE, QUERY) == search_key(
        BASE, QUERY.model_copy(update={"remediation_id": "req-2"})
    )


@pytest.mark.parametrize(
    "change",
    [
        {"query": "OOMKilled high"},
        {"top_k": 7},
        {"min_score": 0.5},
        {"filters": SearchFilters(signal_type="OOMKilled", severity="critical",
                                  custom_labels={"team": ("name=payments",)},
                                  detected_labels={"gitOpsManaged": True})},
        {"filters": SearchFilters(signal_type="OOMKilled",
                                  custom_labels={"team": ("name=checkout",)},
                                  detected_labels={"gitOpsManaged": True})},
        {"filters": SearchFilters(signal_type="OOMKilled",
                                  custom_labels={"team": ("name=payments",)},
                                  detected_labels={"gitOpsManaged": False})},
        {"filters": SearchFilters(signal_type="OOMKilled")},
    ],
)  # fmt: skip
def test_everything_that_changes_the_answer_changes_the_key(change: dict[str, Any]) -> None:
    assert search_key(BASE, QUERY) != search_key(BASE, QUERY.model_copy(update=change))


def test_keys_differ_by_kind_base_url_and_id() -> None:
    keys = {
        workflow_key("schema", BASE, "a"),
        workflow_key("workflow", BASE, "a"),
        workflow_key("schema", BASE, "b"),
        workflow_key("schema", "http://other:8080", "a"),
        search_key("http://other:8080", QUERY),
        search_key(BASE, QUERY),
    }
    assert len(keys) == 6


def test_key_is_stable_and_independent_of_dict_order() -> None:
    assert cache_key("search", BASE, {"a": 1, "b": [1, 2]}) == cache_key(
        "search", BASE, {"b": [1, 2], "a": 1}
    )
    # Pinned: a shared Redis must see the same key from every replica and release.
    assert cache_key("schema", BASE, {"workflow_id": "x"}) == (
        "00419a2e04785ad4731d9dfaa14035fbba593faead5c9c2be30db7419a226cd1"
    )


# -- hits, misses, keys through the client ------------------------------------------------


async def test_hit_makes_no_request(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    hits, misses = lookups("search", "hit"), lookups("search", "miss")
    catalog = make_catalog()
    first = await catalog.search(QUERY)
    second = await catalog.search(QUERY.model_copy(update={"remediation_id": "other"}))
    assert first == second
    assert first is not second
    assert ds.count() == 1
    assert lookups("search", "hit") == hits + 1
    assert lookups("search", "miss") == misses + 1


async def test_hit_rate_gauge_reads_the_lookup_counters_when_scraped(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    for _ in range(4):  # one miss, then hits
        await catalog.search(QUERY)
    hits = sum(lookups(kind, "hit") for kind in ("search", "schema", "workflow"))
    misses = sum(lookups(kind, "miss") for kind in ("search", "schema", "workflow"))
    gauge = REGISTRY.get_sample_value("holmesgpt_playbook_tool_call_cache_hit_rate")
    assert gauge == pytest.approx(hits / (hits + misses))


async def test_different_filters_and_labels_are_different_entries(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    await catalog.search(QUERY)
    await catalog.search(
        QUERY.model_copy(
            update={"filters": QUERY.filters.model_copy(update={"severity": "critical"})}
        )
    )
    await catalog.search(
        QUERY.model_copy(
            update={
                "filters": QUERY.filters.model_copy(
                    update={"custom_labels": {"team": ("name=checkout",)}}
                )
            }
        )
    )
    await catalog.search(QUERY)
    assert ds.count() == 3


async def test_schema_and_workflow_are_cached_by_id(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    for _ in range(3):
        await catalog.get_schema(WORKFLOW_ID)
        await catalog.get_workflow(WORKFLOW_ID)
    assert [r.endpoint for r in ds.requests] == ["schema", "workflow"]


async def test_not_found_is_not_cached(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    from hapi_grpc.domain.errors import WorkflowNotFoundError

    catalog = make_catalog()
    with pytest.raises(WorkflowNotFoundError):
        await catalog.get_schema("added-later")
    ds.workflows["added-later"] = {**ds.workflows[WORKFLOW_ID], "workflow_id": "added-later"}
    assert (await catalog.get_schema("added-later")).workflow_id == "added-later"
    assert ds.count() == 2


async def test_returned_models_are_frozen_and_private(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    result = await catalog.search(QUERY)
    with pytest.raises(ValidationError):
        result.workflows[0].confidence = 0.1  # type: ignore[misc]
    workflow = await catalog.get_workflow(WORKFLOW_ID)
    # Frozen models still hold dicts; a caller scribbling on one must not
    # change what the next caller gets.
    workflow.labels.custom_labels["constraint"] = ("tampered",)
    again = await catalog.get_workflow(WORKFLOW_ID)
    assert again.labels.custom_labels == {"constraint": ("cost-constrained",)}
    assert ds.count("workflow") == 1


async def test_ttl_expiry_refetches(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    clock = ManualClock()
    catalog = make_catalog(CatalogCache(ttl=60, clock=clock))
    await catalog.search(QUERY)
    clock.advance(59.9)
    await catalog.search(QUERY)
    assert ds.count() == 1  # still fresh just before the TTL
    clock.advance(0.1)
    await catalog.search(QUERY)
    assert ds.count() == 2  # expired at the TTL: fetched again
    clock.advance(59.9)
    await catalog.search(QUERY)
    assert ds.count() == 2  # the new answer got a full TTL of its own


async def test_memory_backend_is_bounded(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    catalog = make_catalog(CatalogCache(max_entries=2))
    queries = [QUERY.model_copy(update={"top_k": k}) for k in (1, 2, 3)]
    for query in queries:
        await catalog.search(query)
    await catalog.search(queries[2])  # still cached
    await catalog.search(queries[1])  # still cached
    assert ds.count() == 3
    await catalog.search(queries[0])  # evicted: the least recently used
    assert ds.count() == 4


async def test_memory_backend_is_bounded_in_bytes(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    queries = [QUERY.model_copy(update={"top_k": k}) for k in (1, 2, 3)]
    sizing = make_catalog(CatalogCache())
    key = len("hapi:catalog:search:") + 64
    costs = [
        len((await sizing.search(q)).model_dump_json().encode()) + key + ENTRY_OVERHEAD
        for q in queries
    ]
    # Room for the last two answers, not for all three.
    catalog = make_catalog(CatalogCache(max_bytes=costs[1] + costs[2]))
    for query in queries:
        await catalog.search(query)
    before = ds.count()
    await catalog.search(queries[2])
    await catalog.search(queries[1])
    assert ds.count() == before  # both still cached
    await catalog.search(queries[0])  # pushed out by bytes, not by count
    assert ds.count() == before + 1


async def test_cache_serves_hits_while_the_breaker_is_open(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    breaker = RateCircuitBreaker("cache-open", min_calls=1)
    catalog = make_catalog(breaker=breaker)
    await catalog.search(QUERY)
    ds.script("schema", ds.status(500))
    with pytest.raises(CatalogUnavailableError):
        await catalog.get_schema(WORKFLOW_ID)
    assert breaker.state == "open"
    assert (await catalog.search(QUERY)).total_results == 1
    assert ds.count() == 2


# -- single flight -----------------------------------------------------------------------------


async def test_concurrent_misses_share_one_request(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    ds.script("search", ds.slow(0.2))
    results = await asyncio.gather(*(catalog.search(QUERY) for _ in range(20)))
    assert ds.count() == 1
    assert all(r == results[0] for r in results)
    assert len({id(r) for r in results}) == 20  # every caller gets its own copy


async def test_a_failure_reaches_every_waiter_and_is_not_cached(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    ds.script("search", ds.slow(0.1, ds.status(400, title="Bad Request")))
    outcomes = await asyncio.gather(
        *(catalog.search(QUERY) for _ in range(5)), return_exceptions=True
    )
    assert all(isinstance(o, DataStorageHTTPError) for o in outcomes)
    assert ds.count() == 1
    assert (await catalog.search(QUERY)).total_results == 1
    assert ds.count() == 2


async def test_a_cancelled_waiter_does_not_cancel_the_shared_fetch(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    ds.script("search", ds.slow(1.0))
    first = asyncio.create_task(catalog.search(QUERY))
    second = asyncio.create_task(catalog.search(QUERY))
    await asyncio.sleep(0.1)
    first.cancel()
    result = await second
    assert result.total_results == 1
    with pytest.raises(asyncio.CancelledError):
        await first
    assert ds.count() == 1
    assert ds.aborted == []


async def test_the_fetch_is_aborted_when_every_waiter_left(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    # Timeouts far beyond the test, so only the cancellation can end the request.
    catalog = make_catalog(request_timeout=30.0)
    ds.script("search", ds.slow(20.0))
    tasks = [asyncio.create_task(catalog.search(QUERY)) for _ in range(3)]
    for _ in range(200):
        if ds.count():
            break
        await asyncio.sleep(0.01)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.wait_for(ds.aborted_event.wait(), 1.0)
    # A new caller starts a fresh fetch rather than joining the cancelled one.
    assert (await catalog.search(QUERY)).total_results == 1
    assert ds.count() == 2


async def test_a_waiter_leaves_when_its_own_budget_runs_out(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    catalog = make_catalog()
    ds.script("search", ds.slow(0.5))
    patient = asyncio.create_task(catalog.search(QUERY))
    await asyncio.sleep(0.05)
    with budget_scope(Budget.from_timeout(0.1)), pytest.raises(BudgetExhaustedError):
        await catalog.search(QUERY)
    assert (await patient).total_results == 1
    assert ds.count() == 1


# -- the cache object itself ---------------------------------------------------------------------


async def test_get_or_fetch_round_trip_and_counts() -> None:
    cache = CatalogCache()
    calls = 0

    async def fetch() -> SearchResult:
        nonlocal calls
        calls += 1
        return SearchResult(total_results=calls)

    assert (await cache.get_or_fetch("search", "k", SearchResult, fetch)).total_results == 1
    assert (await cache.get_or_fetch("search", "k", SearchResult, fetch)).total_results == 1
    assert calls == 1
    await cache.close()


def test_rejects_unknown_backends_without_echoing_the_url() -> None:
    with pytest.raises(ValueError) as info:
        CatalogCache("memcached://user:pw@127.0.0.1:11211")
    assert "pw" not in str(info.value)
    with pytest.raises(ValueError):
        CatalogCache(ttl=0)


async def test_an_entry_that_no_longer_parses_is_refetched() -> None:
    # e.g. written by a replica running an older release into a shared Redis
    cache = CatalogCache()

    async def old_shape() -> SearchResult:
        return SearchResult(total_results=1)

    async def new_shape() -> WorkflowSchema:
        return WorkflowSchema(workflow_id="wf")

    # A SearchResult stored where a WorkflowSchema is now expected.
    await cache.get_or_fetch("schema", "k", SearchResult, old_shape)  # type: ignore[arg-type]
    misses = lookups("schema", "miss")
    value = await cache.get_or_fetch("schema", "k", WorkflowSchema, new_shape)
    assert value.workflow_id == "wf"
    assert lookups("schema", "miss") == misses + 1
    # overwritten: the next read is a hit
    assert (await cache.get_or_fetch("schema", "k", WorkflowSchema, old_shape)).workflow_id == "wf"
    await cache.close()


async def test_a_silent_redis_costs_one_short_timeout_then_is_bypassed(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    # Accepts connections and reads, never answers: a hung Redis.
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while await reader.read(4096):
                pass
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    errors = lookups("search", "error")
    try:
        catalog = make_catalog(
            CatalogCache(f"redis://127.0.0.1:{port}/0", op_timeout=0.2, error_cooldown=5.0)
        )
        started = time.monotonic()
        assert (await catalog.search(QUERY)).total_results == 1
        first = time.monotonic() - started
        started = time.monotonic()
        for _ in range(5):
            assert (await catalog.search(QUERY)).total_results == 1
        rest = time.monotonic() - started
    finally:
        server.close()
    assert 0.15 < first < 1.0  # one lookup timed out; the store was skipped
    assert rest < 0.5  # bypassed during the cool-down
    assert ds.count() == 6
    assert lookups("search", "error") == errors + 6
