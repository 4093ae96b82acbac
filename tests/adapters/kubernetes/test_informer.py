"""The list + watch informer against the real API server: watches that the
server ends are resumed from the last resourceVersion (no new list, nothing
missed). A resourceVersion too old to watch from (410 Gone) is followed by a
fresh list: tests/adapters/catalog/kubernetes/test_api_server_away.py, where a
restarted API server no longer serves the version the watch had reached."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hapi_grpc.adapters.catalog.workflow_resources import ACTION_TYPES
from hapi_grpc.adapters.kubernetes.credentials import load_connection
from hapi_grpc.adapters.kubernetes.informer import Informer, InformerLimits
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from tests.fakes.kube_catalog import CatalogResources, eventually

# Every watch ends after a second: resumption is exercised many times a test.
SHORT = InformerLimits(watch_seconds=(1, 1))


@pytest.fixture
async def reader(kubeconfig: Path) -> AsyncIterator[ApiServerReader]:
    connection = await load_connection({"KUBECONFIG": str(kubeconfig)})
    assert connection is not None
    opened = ApiServerReader(connection)
    try:
        yield opened
    finally:
        await opened.close()


def names(informer: Informer[Any]) -> set[str]:
    return {spec_name for spec_name in informer.objects.values()}


async def test_watches_resume_from_their_resource_version(
    resources: CatalogResources, reader: ApiServerReader
) -> None:
    relists: list[str] = []
    informer: Informer[str] = Informer(
        reader,
        ACTION_TYPES,
        resources.namespace,
        lambda obj: str(obj["spec"]["name"]),
        limits=SHORT,
        on_relist=relists.append,
    )
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 10)
        for number in range(4):  # across several watches
            resources.action_type(f"type-{number}", f"Type{number}")
            await asyncio.sleep(0.6)
        resources.delete("actiontypes", "type-0")
        await eventually(lambda: names(informer) == {"Type1", "Type2", "Type3"})
        assert relists == ["start"]
        assert informer.connected
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
