"""Pytest fixtures over the real test cluster: the cluster, a test kubelet, fresh names per test.

A conftest imports the ones it wants (``from tests.fakes.kube_pytest import ...``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import kubernetes
import pytest

from tests.fakes.kube_cluster import KubeCluster, ensure_namespace, kube_cluster
from tests.fakes.kubelet import FakeKubelet, running_kubelet

__all__ = ["kube_api", "kube_cluster", "kubelet", "namespace", "node_name"]


@pytest.fixture(scope="session")
def kubelet() -> Iterator[FakeKubelet]:
    with running_kubelet() as running:
        yield running


@pytest.fixture(scope="session")
def kube_api(kube_cluster: KubeCluster) -> kubernetes.client.ApiClient:
    return kube_cluster.api_client()


@pytest.fixture
def namespace(kube_api: kubernetes.client.ApiClient) -> str:
    """A fresh namespace (deleted ones stay Terminating without a controller-manager)."""
    name = f"k-{secrets.token_hex(4)}"
    ensure_namespace(kubernetes.client.CoreV1Api(kube_api), name)
    return name


@pytest.fixture
def node_name() -> str:
    return f"node-{secrets.token_hex(4)}"
