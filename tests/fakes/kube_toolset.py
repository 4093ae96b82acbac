"""The kubernetes toolset as the service builds it, over a reader of the real test cluster."""

from __future__ import annotations

from pathlib import Path

from hapi_grpc.adapters.kubernetes.credentials import load_connection
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.tool import ToolContext
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope
from hapi_grpc.toolsets.kubernetes.tools import KubernetesToolsetSource
from tests.fakes.kube_cluster import KubeCluster

LIMITS = ToolsetLimits(max_calls=20, call_timeout=5.0, max_output_chars=12_000)


async def open_reader(
    cluster: KubeCluster, path: Path, token: str | None = None
) -> ApiServerReader:
    """A reader configured the way operators configure it: a kubeconfig file."""
    cluster.write_kubeconfig(path, token)
    connection = await load_connection({"KUBECONFIG": str(path)})
    assert connection is not None
    return ApiServerReader(connection)


def toolset_source(
    reader: ApiServerReader, scope: KubernetesScope | None = None, **kw: int
) -> KubernetesToolsetSource:
    return KubernetesToolsetSource(reader, scope or KubernetesScope(), LIMITS, **kw)


def toolset(reader: ApiServerReader, scope: KubernetesScope | None = None, **kw: int) -> Toolset:
    return toolset_source(reader, scope, **kw)(Caller())


def context(seconds: float = 10.0) -> ToolContext:
    return ToolContext(min(seconds, 5.0))
