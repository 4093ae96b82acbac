"""The API server goes away while the server serves a catalog read from it: the
last good catalog keeps being served (searches, schemas, validation), the
service stays ready, a warning and `hapi_catalog_kubernetes_connected` say
so; when the API server is back the watch resumes (listing again where its
resourceVersion was compacted away) and changes made since are served.

This test stops kube-apiserver, so it runs a cluster of its own."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import kubernetes
import pytest
from grpc_health.v1 import health_pb2

from hapi_grpc.domain.catalog import SearchQuery
from hapi_grpc.domain.errors import WorkflowNotFoundError
from hapi_grpc.observability import metrics
from hapi_grpc.transport.server import SERVICE_NAME
from tests.adapters.catalog.kubernetes.conftest import open_catalog
from tests.adapters.catalog.kubernetes.test_grpc import GOOD, validate
from tests.fakes.kube_catalog import CatalogResources, ensure_catalog_crds, eventually
from tests.fakes.kube_cluster import ensure_namespace, running_cluster
from tests.helpers.grpc_server import RunningServer, running_server

QUERY = SearchQuery(query="IncreaseMemoryLimits")
KINDS = ("remediationworkflows", "actiontypes")


def connected(resource: str) -> float | None:
    return metrics.registry.get_sample_value(
        "hapi_catalog_kubernetes_connected", {"resource": resource}
    )


def lists(resource: str, reason: str) -> float:
    return (
        metrics.registry.get_sample_value(
            "hapi_catalog_kubernetes_lists_total", {"resource": resource, "reason": reason}
        )
        or 0.0
    )


async def ready(server: RunningServer) -> int:
    request = health_pb2.HealthCheckRequest(service=SERVICE_NAME)
    return int((await server.health.Check(request, timeout=5)).status)


@pytest.mark.timeout(240)
async def test_the_last_good_catalog_is_served_while_the_api_server_is_away(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hapi_grpc.adapters.kubernetes.informer")
    with running_cluster() as cluster:
        ensure_catalog_crds(cluster)
        ensure_namespace(kubernetes.client.CoreV1Api(cluster.api_client()), "catalog")
        resources = CatalogResources(cluster, "catalog")
        resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
        resources.workflow("raise-memory", "IncreaseMemoryLimits")
        catalog = open_catalog(cluster.write_kubeconfig(tmp_path / "config"), "catalog")
        async with running_server(catalog=catalog) as server:
            await catalog.wait_synced()
            assert await ready(server) == health_pb2.HealthCheckResponse.SERVING
            assert [h.workflow_id for h in (await catalog.search(QUERY)).workflows] == [
                "raise-memory"
            ]

            await asyncio.to_thread(cluster.stop_apiserver)
            await eventually(lambda: all(connected(kind) == 0 for kind in KINDS))
            await asyncio.sleep(1.0)  # ten times the rebuild delay, and retries failing
            # Served as last read, and still ready: degraded, not down.
            assert [h.workflow_id for h in (await catalog.search(QUERY)).workflows] == [
                "raise-memory"
            ]
            verdict = await server.stub.ValidateWorkflowParameters(
                validate("raise-memory", GOOD), timeout=5
            )
            assert verdict.validation.valid
            assert await ready(server) == health_pb2.HealthCheckResponse.SERVING
            warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert any("serving the catalog last read" in m for m in warned), warned

            expired = sum(lists(kind, "expired") for kind in KINDS)
            await asyncio.to_thread(cluster.start_apiserver)
            resources.set_status("remediationworkflows", "raise-memory", "Disabled")

            async def gone() -> bool:
                try:
                    await catalog.get_schema("raise-memory")
                except WorkflowNotFoundError:
                    return True
                return False

            await eventually(gone, timeout=60)
            await eventually(lambda: all(connected(kind) == 1 for kind in KINDS), timeout=60)
            assert any("answers again" in r.getMessage() for r in caplog.records)
            # The restarted server's watch cache begins after the version the
            # watches had reached: 410 Gone, then a fresh list.
            assert sum(lists(kind, "expired") for kind in KINDS) > expired
