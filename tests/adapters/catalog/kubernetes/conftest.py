"""The workflow catalog read from the real test cluster's resources."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hapi_grpc.adapters.catalog.kubernetes import KubernetesCatalog
from hapi_grpc.app import build_kubernetes_catalog
from hapi_grpc.config import Settings
from tests.fakes.kube_catalog import CatalogResources, ensure_catalog_crds, reader_token
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kube_pytest import kube_api, kube_cluster, namespace

__all__ = ["kube_api", "kube_cluster", "namespace"]


@pytest.fixture(scope="session")
def catalog_cluster(kube_cluster: KubeCluster) -> KubeCluster:
    ensure_catalog_crds(kube_cluster)
    return kube_cluster


@pytest.fixture(scope="session")
def kubeconfig(catalog_cluster: KubeCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kubeconfig with a token of the shipped read role, nothing more."""
    token = reader_token(catalog_cluster, "hapi-catalog-test", "catalog-reader")
    return catalog_cluster.write_kubeconfig(tmp_path_factory.mktemp("kubeconfig") / "config", token)


@pytest.fixture
def resources(catalog_cluster: KubeCluster, namespace: str) -> CatalogResources:
    return CatalogResources(catalog_cluster, namespace)


def open_catalog(kubeconfig: Path, namespace: str) -> KubernetesCatalog:
    """The catalog as `serve` builds it for HAPI_CATALOG_SOURCE=kubernetes."""
    settings = Settings(catalog_source="kubernetes", catalog_namespace=namespace)
    catalog = build_kubernetes_catalog(settings, {"KUBECONFIG": str(kubeconfig)})
    assert isinstance(catalog, KubernetesCatalog)
    return catalog


@pytest.fixture
async def catalog(
    resources: CatalogResources, kubeconfig: Path
) -> AsyncIterator[KubernetesCatalog]:
    opened = open_catalog(kubeconfig, resources.namespace)
    try:
        yield opened
    finally:
        await opened.close()
