"""The real test cluster (kube-apiserver + etcd), a test kubelet, and a reader of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kube_pytest import kube_api, kube_cluster, kubelet, namespace, node_name
from tests.fakes.kube_toolset import open_reader

__all__ = ["kube_api", "kube_cluster", "kubelet", "namespace", "node_name", "reader"]


@pytest.fixture
async def reader(
    kube_cluster: KubeCluster,
    tmp_path: Path,
) -> AsyncIterator[ApiServerReader]:
    opened = await open_reader(kube_cluster, tmp_path / "kubeconfig")
    try:
        yield opened
    finally:
        await opened.close()
