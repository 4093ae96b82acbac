"""The real test cluster (kube-apiserver + etcd), a test kubelet, and readers of it."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import kubernetes
import pytest

from hapi_grpc.adapters.kubernetes.credentials import load_connection
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.domain.deadline import Budget
from hapi_grpc.domain.toolsets.kubernetes import KubernetesToolsetSource
from hapi_grpc.domain.toolsets.kubernetes_scope import KubernetesScope
from hapi_grpc.domain.toolsets.tool import ToolContext
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from tests.fakes.kube_cluster import KubeCluster, ensure_namespace, kube_cluster  # noqa: F401
from tests.fakes.kubelet import FakeKubelet, running_kubelet

LIMITS = ToolsetLimits(max_calls=20, call_timeout=5.0, max_output_chars=12_000)


@pytest.fixture(scope="session")
def kubelet() -> Iterator[FakeKubelet]:
    with running_kubelet() as running:
        yield running


@pytest.fixture(scope="session")
def kube_api(kube_cluster: KubeCluster) -> kubernetes.client.ApiClient:  # noqa: F811
    return kube_cluster.api_client()


@pytest.fixture
def namespace(kube_api: kubernetes.client.ApiClient) -> str:
    name = f"k-{secrets.token_hex(4)}"
    ensure_namespace(kubernetes.client.CoreV1Api(kube_api), name)
    return name


@pytest.fixture
def node_name() -> str:
    return f"node-{secrets.token_hex(4)}"


async def open_reader(
    cluster: KubeCluster, path: Path, token: str | None = None
) -> ApiServerReader:
    """A reader configured the way operators configure it: a kubeconfig file."""
    cluster.write_kubeconfig(path, token)
    connection = await load_connection({"KUBECONFIG": str(path)})
    assert connection is not None
    return ApiServerReader(connection)


@pytest.fixture
async def reader(
    kube_cluster: KubeCluster,  # noqa: F811
    tmp_path: Path,
) -> AsyncIterator[ApiServerReader]:
    opened = await open_reader(kube_cluster, tmp_path / "kubeconfig")
    try:
        yield opened
    finally:
        await opened.close()


def toolset(reader: ApiServerReader, scope: KubernetesScope | None = None, **kw: int) -> Toolset:
    return KubernetesToolsetSource(reader, scope or KubernetesScope(), LIMITS, **kw)()


def context(seconds: float = 10.0) -> ToolContext:
    return ToolContext(Budget.from_timeout(seconds), 5.0)
