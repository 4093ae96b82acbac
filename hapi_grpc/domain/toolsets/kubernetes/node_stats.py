"""`kubernetes_node_stats`: what fills a node's disk, as its kubelet reports it.

The kubelet's stats summary, read through the API server's node proxy
(`/api/v1/nodes/{node}/proxy/stats/summary`): the node and image filesystems, and
per pod its containers' logs and writable layers and its volumes. The view shows
the totals and the largest node-local volumes; the record keeps the same facts
(`observed.node_stats`), which is how a node clean-up's premise (the disk is full
of what a clean-up reclaims, not of workload data) is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.observed.node_stats import node_stats_facts
from hapi_grpc.domain.toolsets.kubernetes.args import KubernetesNodeStatsArgs
from hapi_grpc.domain.toolsets.kubernetes.session import KubernetesSession, guarded
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult

__all__ = ["NODE_STATS_TOOL", "KubernetesNodeStats"]

NODE_STATS_TOOL = "kubernetes_node_stats"
_GIB = 1024**3


def _gib(value: int) -> float:
    return round(value / _GIB, 2)


@dataclass(frozen=True)
class KubernetesNodeStats:
    session: KubernetesSession
    name: str = NODE_STATS_TOOL
    description: str = (
        "What fills one node's disk, from its kubelet's stats summary: node and image"
        " filesystem use, container logs, containers' writable layers and node-local volumes"
        " (emptyDir), with the largest volumes and their pods. Use it for disk pressure."
    )
    arguments: type[KubernetesNodeStatsArgs] = KubernetesNodeStatsArgs

    @guarded
    async def run(self, args: KubernetesNodeStatsArgs, ctx: ToolContext) -> ToolResult:
        session = self.session
        await session.resolve("v1/Node", None, ctx)  # the scope checks of a Node read
        summary = await session.reader.node_stats(args.node, ctx.timeout)
        facts = node_stats_facts(args.node, summary)
        if ctx.observed is not None:
            ctx.observed.record_node_stats(args.node, summary)
        return session.answer(_view(facts))


def _view(facts: dict[str, Any]) -> dict[str, Any]:
    capacity = facts["fs_capacity_bytes"]
    used = facts["fs_used_bytes"]
    return {
        "kind": "NodeStatsSummary",
        "node": facts["node"],
        "node_fs_gib": {"used": _gib(used), "capacity": _gib(capacity)},
        "node_fs_used_percent": round(100 * used / capacity, 1) if capacity else None,
        "image_fs_used_gib": _gib(facts["image_fs_used_bytes"]),
        "image_fs_on_node_fs": facts["image_fs_shared"],
        "container_logs_gib": _gib(facts["logs_bytes"]),
        "container_writable_layers_gib": _gib(facts["rootfs_bytes"]),
        "node_local_volumes_gib": _gib(facts["volumes_bytes"]),
        "largest_volumes": [
            {"namespace": v["namespace"], "pod": v["pod"], "volume": v["volume"]}
            | {"used_gib": _gib(v["used_bytes"])}
            for v in facts["largest_volumes"]
        ],
    }
