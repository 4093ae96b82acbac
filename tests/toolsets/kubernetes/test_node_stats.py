"""`kubernetes_node_stats` through the real API server's node proxy to the test kubelet.

The kubelet's stats summary reaches the tool as the API server proxies it
(`/api/v1/nodes/{node}/proxy/stats/summary`); the record keeps what fills the disk
(reclaimable images and logs against workload volumes and writable layers), which
is what a node clean-up's premise reads.
"""

from __future__ import annotations

from typing import Any

import kubernetes
import pytest

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.toolsets.tool import ToolContext
from tests.fakes.kube_toolset import toolset
from tests.fakes.kubelet import FakeKubelet, register_node

GIB = 1024**3


def summary(node: str, *, images: int, logs: int, empty_dir: int) -> dict[str, Any]:
    """A stats summary as a kubelet writes it: one node filesystem shared with images."""
    return {
        "node": {
            "nodeName": node,
            "fs": {"capacityBytes": 100 * GIB, "usedBytes": 92 * GIB, "availableBytes": 8 * GIB},
            "runtime": {
                "imageFs": {
                    "capacityBytes": 100 * GIB,
                    "usedBytes": images,
                    "availableBytes": 8 * GIB,
                }
            },
        },
        "pods": [
            {
                "podRef": {"name": "ingest-0", "namespace": "logs", "uid": "u1"},
                "containers": [
                    {
                        "name": "ingest",
                        "rootfs": {"usedBytes": GIB},
                        "logs": {"usedBytes": logs},
                    }
                ],
                "volume": [
                    {"name": "spool", "usedBytes": empty_dir},
                    {"name": "data", "usedBytes": 50 * GIB, "pvcRef": {"name": "d"}},
                ],
            }
        ],
    }


def stats_node(api: kubernetes.client.ApiClient, kubelet: FakeKubelet, name: str) -> None:
    """A Node whose kubelet is `kubelet` on a port of its own, at an address the API
    server's node proxy accepts (it refuses loopback ones)."""
    if kubelet.node_address is None:
        pytest.skip("this machine has no non-loopback address for the node proxy to reach")
    register_node(api, name, kubelet.port_for(name), address=kubelet.node_address)


def on_node(
    api: kubernetes.client.ApiClient,
    node: str,
    images: list[dict[str, Any]],
    namespace: str,
    image: str,
) -> None:
    """The Node reports `images`; a Pod bound to it runs `image`."""
    core = kubernetes.client.CoreV1Api(api)
    core.patch_node_status(node, {"status": {"images": images}}, _request_timeout=30)
    try:
        core.create_namespace({"metadata": {"name": namespace}}, _request_timeout=30)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:
            raise
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": f"ingest-{node}"},
            "spec": {"nodeName": node, "containers": [{"name": "ingest", "image": image}]},
        },
        _request_timeout=30,
    )


async def node_stats(reader: ApiServerReader, node: str, observed: Observed) -> Any:
    tools = toolset(reader)
    tool = next(t for t in tools.tools if t.name == "kubernetes_node_stats")
    return await tool.run(tool.arguments.model_validate({"node": node}), ToolContext(5.0, observed))


async def test_the_summary_comes_through_the_node_proxy_and_is_recorded(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    kubelet: FakeKubelet,
    node_name: str,
) -> None:
    stats_node(kube_api, kubelet, node_name)
    kubelet.set_stats_summary(
        node_name, summary(node_name, images=10 * GIB, logs=GIB, empty_dir=70 * GIB)
    )
    # Of the Node's two images, its Pod runs one (named without its registry).
    images = [
        {"names": ["docker.io/library/ingest:2.1"], "sizeBytes": 3 * GIB},
        {"names": ["registry.example/old/ingest:1.9"], "sizeBytes": 4 * GIB},
    ]
    on_node(kube_api, node_name, images, "logs", "ingest:2.1")
    observed = Observed()
    result = await node_stats(reader, node_name, observed)
    assert result.status is ToolCallStatus.SUCCESS, result.payload
    view = result.payload["cluster_data"]
    assert view["kind"] == "NodeStatsSummary" and view["node"] == node_name
    assert view["node_local_volumes_gib"] == 70.0
    assert view["largest_volumes"][0] == {
        "namespace": "logs",
        "pod": "ingest-0",
        "volume": "spool",
        "used_gib": 70.0,
    }
    assert node_name in kubelet.stats_requests  # the kubelet of that node answered
    facts = observed.activation()["node_stats"][0]
    assert facts["node"] == node_name and facts["image_fs_shared"] is True
    # The claim-backed volume is not on the node's disk: counted in neither sum; the
    # image its Pod runs is not reclaimable.
    assert facts["images_in_use_bytes"] == 3 * GIB
    assert facts["reclaimable_bytes"] == 10 * GIB - 3 * GIB + GIB
    assert facts["workload_bytes"] == 70 * GIB + GIB


async def test_a_node_whose_kubelet_has_no_summary_is_an_error_not_a_fact(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    kubelet: FakeKubelet,
    node_name: str,
) -> None:
    stats_node(kube_api, kubelet, node_name)
    observed = Observed()
    result = await node_stats(reader, node_name, observed)
    assert result.status is not ToolCallStatus.SUCCESS
    assert observed.activation()["node_stats"] == []
