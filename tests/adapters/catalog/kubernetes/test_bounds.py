"""What the cluster's catalog reads is bounded: objects kept per kind, bytes and
levels of nesting per object in a list and per watch event (an object that grows
past a bound while served is dropped after a fresh list), against the real API
server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hapi_grpc.adapters.catalog.kubernetes import KubernetesCatalog
from hapi_grpc.adapters.kubernetes.credentials import load_connection
from hapi_grpc.adapters.kubernetes.informer import InformerLimits
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.domain.catalog import SearchQuery
from hapi_grpc.observability import metrics
from tests.fakes.kube_catalog import MEMORY_PARAMETERS, CatalogResources, eventually, parameter

LIMITS = InformerLimits(max_objects=3, max_object_bytes=8 * 1024, page_size=2)
QUERY = SearchQuery(query="IncreaseMemoryLimits", top_k=10)


@pytest.fixture
async def bounded(
    resources: CatalogResources, kubeconfig: Path
) -> AsyncIterator[KubernetesCatalog]:
    async def connect() -> ApiServerReader:
        connection = await load_connection({"KUBECONFIG": str(kubeconfig)})
        assert connection is not None
        return ApiServerReader(connection)

    catalog = KubernetesCatalog(connect, resources.namespace, limits=LIMITS)
    try:
        yield catalog
    finally:
        await catalog.close()


async def ids(catalog: KubernetesCatalog) -> list[str]:
    return sorted(hit.workflow_id for hit in (await catalog.search(QUERY)).workflows)


def lists(reason: str) -> float:
    return (
        metrics.registry.get_sample_value(
            "hapi_catalog_kubernetes_lists_total",
            {"resource": "remediationworkflows", "reason": reason},
        )
        or 0.0
    )


async def test_no_more_objects_than_the_bound_are_kept(
    resources: CatalogResources, bounded: KubernetesCatalog, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hapi_grpc.adapters.kubernetes.informer")
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    for number in range(5):  # listed in pages of 2
        resources.workflow(f"raise-memory-{number}", "IncreaseMemoryLimits")
    await bounded.wait_synced()
    assert len(await ids(bounded)) == 3
    assert any(
        "left out of the remediationworkflows list" in r.getMessage() for r in caplog.records
    )
    # One more while watching is left out too.
    resources.workflow("raise-memory-late", "IncreaseMemoryLimits")
    await eventually(
        lambda: any("raise-memory-late left out" in r.getMessage() for r in caplog.records)
    )
    assert "raise-memory-late" not in await ids(bounded)


async def test_an_object_beyond_the_byte_bound_is_left_out_listed_or_watched(
    resources: CatalogResources, bounded: KubernetesCatalog
) -> None:
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    large = {"what": "w" * 2000, "whenToUse": "u" * 2000, "whenNotToUse": "n" * 2000,
             "preconditions": "p" * 2000}  # fmt: skip
    resources.workflow("too-large", "IncreaseMemoryLimits", description=large)
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    await bounded.wait_synced()
    assert await ids(bounded) == ["raise-memory"]

    # Served, then grown past the bound: its event is too large to read, so the
    # catalog lists again and leaves it out.
    before = lists("too_large")
    resources.patch("remediationworkflows", "raise-memory", {"spec": {"description": large}})
    await eventually(lambda: _ids_are(bounded, []))
    assert lists("too_large") == before + 1
    # Shrunk again: back.
    small = {"what": "Raise the memory limit", "whenToUse": "OOMKilled at a steady working set",
             "whenNotToUse": None, "preconditions": None}  # fmt: skip
    resources.patch("remediationworkflows", "raise-memory", {"spec": {"description": small}})
    await eventually(lambda: _ids_are(bounded, ["raise-memory"]))


async def _ids_are(catalog: KubernetesCatalog, expected: list[str]) -> bool:
    return await ids(catalog) == expected


def _nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


async def test_an_object_nested_past_the_bound_is_left_out_listed_or_watched(
    resources: CatalogResources, catalog: KubernetesCatalog
) -> None:
    # The API server takes hundreds of levels in a field it does not type; one such
    # workflow used to fail every list and watch, freezing or emptying the catalog.
    deep = [*MEMORY_PARAMETERS, parameter("EXTRA", required=False, default=_nested(70))]
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.workflow("too-deep", "IncreaseMemoryLimits", parameters=deep)
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    await asyncio.wait_for(catalog.wait_synced(), 30)
    assert await ids(catalog) == ["raise-memory"]

    # Watched: another one nested past the bound, then one that is fine.
    resources.workflow("too-deep-2", "IncreaseMemoryLimits", parameters=deep)
    resources.workflow("raise-memory-2", "IncreaseMemoryLimits")
    await eventually(lambda: _ids_are(catalog, ["raise-memory", "raise-memory-2"]))
    # Served, then nested past the bound: dropped; the other stays.
    resources.patch("remediationworkflows", "raise-memory", {"spec": {"parameters": deep}})
    await eventually(lambda: _ids_are(catalog, ["raise-memory-2"]))
