"""`hapi-grpc serve` with HAPI_CATALOG_SOURCE=kubernetes, as users run it: ready
once the resources were read, serving them; no credentials: a one-line
configuration error and exit status 2."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import grpc

from hapi.v1 import service_pb2_grpc
from tests.adapters.catalog.kubernetes.test_grpc import GOOD, validate
from tests.fakes.kube_catalog import CatalogResources
from tests.fakes.serve_process import ServeProcess


async def test_serve_reads_the_catalog_from_the_cluster(
    resources: CatalogResources, kubeconfig: Path, tmp_path: Path
) -> None:
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    process = ServeProcess(
        HAPI_CATALOG_SOURCE="kubernetes",
        HAPI_CATALOG_NAMESPACE=resources.namespace,
        HAPI_KUBERNETES="off",
        KUBECONFIG=str(kubeconfig),
        HOME=str(tmp_path),
    )
    try:
        await process.start()  # returns once hapi.v1 is SERVING: the catalog was read
        async with grpc.aio.insecure_channel(process.address) as channel:
            stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
            verdict = await stub.ValidateWorkflowParameters(
                validate("raise-memory", GOOD), timeout=10
            )
        assert verdict.validation.valid and verdict.workflow_version == "1.0.0"
        async with aiohttp.ClientSession() as session:
            async with session.get(process.metrics_url) as response:
                exposed = await response.text()
        assert 'hapi_catalog_kubernetes_workflows{state="offered"} 1.0' in exposed
        assert 'hapi_catalog_kubernetes_connected{resource="remediationworkflows"} 1.0' in exposed
    finally:
        await process.close()


async def test_serve_without_credentials_is_a_configuration_error(tmp_path: Path) -> None:
    process = ServeProcess(
        HAPI_CATALOG_SOURCE="kubernetes",
        KUBECONFIG=str(tmp_path / "missing"),
        HOME=str(tmp_path),
    )
    try:
        process._spawn()
        assert process.proc is not None
        assert process.proc.wait(60) == 2
        assert "HAPI_CATALOG_SOURCE=kubernetes needs in-cluster or KUBECONFIG" in process.log()
    finally:
        await process.close()
