"""CatalogCache on a real redis-server: sharing between replicas, degrading without it."""

from __future__ import annotations

import logging
import socket
import time

import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY

from hapi_grpc.adapters.cache import CatalogCache
from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.domain.catalog import SearchQuery
from tests.fakes.redis_server import RedisServer

from .conftest import WORKFLOW_ID, FakeDataStorage

pytestmark = pytest.mark.redis

QUERY = SearchQuery(query="OOMKilled critical", remediation_id="req-1")


def errors(kind: str) -> float:
    return (
        REGISTRY.get_sample_value("hapi_cache_lookups_total", {"kind": kind, "result": "error"})
        or 0.0
    )


async def test_replicas_share_answers_through_redis(
    ds: FakeDataStorage, redis_server: RedisServer
) -> None:
    caches = [CatalogCache(redis_server.url, ttl=60) for _ in range(2)]
    replicas = [DataStorageCatalog(DataStorageClient(ds.url), cache=cache) for cache in caches]
    try:
        first = await replicas[0].search(QUERY)
        await replicas[0].get_schema(WORKFLOW_ID)
        assert ds.count() == 2

        second = await replicas[1].search(QUERY.model_copy(update={"remediation_id": "req-2"}))
        schema = await replicas[1].get_schema(WORKFLOW_ID)
        assert second == first
        assert schema.workflow_id == WORKFLOW_ID
        assert ds.count() == 2  # the second replica sent nothing
    finally:
        for replica, cache in zip(replicas, caches, strict=True):
            await replica.close()
            await cache.close()


async def test_entries_carry_the_ttl_and_the_namespace(
    ds: FakeDataStorage, redis_server: RedisServer
) -> None:
    cache = CatalogCache(redis_server.url, ttl=60, namespace="hapi-test")
    catalog = DataStorageCatalog(DataStorageClient(ds.url), cache=cache)
    client = aioredis.from_url(redis_server.url)
    try:
        await catalog.get_workflow(WORKFLOW_ID)
        keys = [k.decode() async for k in client.scan_iter("*")]
        assert len(keys) == 1
        assert keys[0].startswith("hapi-test:catalog:workflow:")
        assert 55_000 < await client.pttl(keys[0]) <= 60_000
    finally:
        await client.aclose()
        await catalog.close()
        await cache.close()


async def test_redis_going_away_degrades_to_no_cache(
    ds: FakeDataStorage, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    cache = CatalogCache(redis_server.url, error_cooldown=0.0, error_log_every=100)
    catalog = DataStorageCatalog(DataStorageClient(ds.url), cache=cache)
    before = errors("search")
    try:
        await catalog.search(QUERY)
        await catalog.search(QUERY)
        assert ds.count() == 1
        redis_server.stop()

        with caplog.at_level(logging.WARNING, logger="hapi_grpc.adapters.cache"):
            for _ in range(5):
                assert (await catalog.search(QUERY)).total_results == 1
        assert ds.count() == 6
        assert errors("search") >= before + 5
        warnings = [r for r in caplog.records if r.name == "hapi_grpc.adapters.cache"]
        assert len(warnings) == 1  # once per 100 errors, not once per error
        assert "serving without the cache" in warnings[0].getMessage()
    finally:
        await catalog.close()
        await cache.close()


async def test_unreachable_redis_from_the_start(ds: FakeDataStorage) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cache = CatalogCache(f"redis://:hunter2@127.0.0.1:{port}/0")
    catalog = DataStorageCatalog(DataStorageClient(ds.url), cache=cache)
    try:
        started = time.monotonic()
        for _ in range(3):
            assert (await catalog.get_schema(WORKFLOW_ID)).workflow_id == WORKFLOW_ID
        assert time.monotonic() - started < 2.0
        assert ds.count() == 3
    finally:
        await catalog.close()
        await cache.close()


async def test_the_password_never_reaches_the_logs(
    ds: FakeDataStorage, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cache = CatalogCache(f"redis://:hunter2@127.0.0.1:{port}/0", error_log_every=1)
    catalog = DataStorageCatalog(DataStorageClient(ds.url), cache=cache)
    try:
        with caplog.at_level(logging.DEBUG):
            await catalog.search(QUERY)
        assert "serving without the cache" in caplog.text
        assert "hunter2" not in caplog.text
    finally:
        await catalog.close()
        await cache.close()
