"""The REST client against the project's own Data Storage server: same answers as in process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from hapi_grpc.adapters.cache import CatalogCache
from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.adapters.datastorage_server import create_app
from hapi_grpc.domain.catalog import SearchFilters, SearchQuery
from hapi_grpc.domain.errors import WorkflowNotFoundError


@pytest.fixture
async def pair() -> AsyncIterator[tuple[EmbeddedCatalog, DataStorageCatalog]]:
    embedded = EmbeddedCatalog.from_file(None)
    runner = web.AppRunner(create_app(embedded), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    cache = CatalogCache()
    remote = DataStorageCatalog(
        DataStorageClient(f"http://127.0.0.1:{runner.addresses[0][1]}"), cache=cache
    )
    try:
        yield embedded, remote
    finally:
        await remote.close()
        await cache.close()
        await runner.cleanup()


QUERIES = [
    SearchQuery(query="OOMKilled critical"),
    SearchQuery(query="CrashLoopBackOff high", top_k=10, min_score=0.3),
    SearchQuery(
        query="OOMKilled critical memory",
        filters=SearchFilters(
            signal_type="OOMKilled",
            environment="production",
            custom_labels={"constraint": ("cost-constrained",)},
            detected_labels={"gitOpsManaged": True, "gitOpsTool": "argocd"},
        ),
        remediation_id="req-2025-11-30-abc123",
    ),
    SearchQuery(query="nothing matches this at all", min_score=0.99),
]


@pytest.mark.parametrize("query", QUERIES)
async def test_search_answers_match_the_embedded_catalog(
    pair: tuple[EmbeddedCatalog, DataStorageCatalog], query: SearchQuery
) -> None:
    embedded, remote = pair
    expected = await embedded.search(query)
    assert await remote.search(query) == expected
    # Only the last query is meant to find nothing; the others compare real hits.
    assert bool(expected.workflows) is (query is not QUERIES[-1])


async def test_every_schema_and_workflow_round_trips(
    pair: tuple[EmbeddedCatalog, DataStorageCatalog],
) -> None:
    embedded, remote = pair
    assert embedded.workflows
    for workflow in embedded.workflows:
        wid = workflow.workflow_id
        assert await remote.get_schema(wid) == await embedded.get_schema(wid)
        assert await remote.get_workflow(wid) == await embedded.get_workflow(wid)


async def test_unknown_workflow_is_not_found(
    pair: tuple[EmbeddedCatalog, DataStorageCatalog],
) -> None:
    _, remote = pair
    with pytest.raises(WorkflowNotFoundError):
        await remote.get_schema("no-such-workflow-v9")
    with pytest.raises(WorkflowNotFoundError):
        await remote.get_workflow("no-such-workflow-v9")
