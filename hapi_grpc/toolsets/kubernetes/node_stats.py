"""`kubernetes_node_stats`: what fills a node's disk, as its kubelet reports it.

Design notes: docs/internals.md (`toolsets/kubernetes/node_stats.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hapi_grpc.adapters.kubernetes.reader import KubeFailure
from hapi_grpc.domain.observed.facts import NodeStatsFacts, VolumeUse
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult
from hapi_grpc.toolsets.kubernetes.args import KubernetesNodeStatsArgs
from hapi_grpc.toolsets.kubernetes.images import images_in_use_bytes
from hapi_grpc.toolsets.kubernetes.kinds import mapping
from hapi_grpc.toolsets.kubernetes.scope import ScopeRefusal
from hapi_grpc.toolsets.kubernetes.session import KubernetesSession, guarded

__all__ = ["NODE_STATS_TOOL", "KubernetesNodeStats", "node_stats_facts"]

NODE_STATS_TOOL = "kubernetes_node_stats"
# What stands for the volumes of namespaces the investigation may not read: their
# bytes count, their namespaces, pods and volume names are another tenant's.
OTHER_NAMESPACES = "volumes of namespaces this investigation may not read"
_GIB = 1024**3
_PODS = 500
_TOP = 5


def _bytes(fs: dict[str, Any], key: str = "usedBytes") -> int:
    value = fs.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def node_stats_facts(
    node: str,
    summary: dict[str, Any],
    readable: Callable[[str], bool] = lambda _: True,
    *,
    images_in_use: int | None = None,
) -> NodeStatsFacts:
    """The facts of one summary: what a clean-up can reclaim (the container logs and,
    when images share the node filesystem, the images no Pod on the node uses: none
    when `images_in_use` is unknown, None) and what it must
    not touch (the workloads' node-local volumes and writable layers, and whatever
    the summary attributes to nobody: hostPath data and the host's own files, which
    the kubelet neither accounts for nor garbage-collects; claims are not on the
    node's filesystem and count in neither). Volumes of a namespace that is not
    `readable` count in every total but are named only together, as OTHER_NAMESPACES."""
    stats = mapping(summary, "node")
    fs = mapping(stats, "fs")
    image_fs = mapping(mapping(stats, "runtime"), "imageFs")
    # One filesystem for both when the kubelet reports the same capacity for each.
    shared = bool(image_fs) and _bytes(image_fs, "capacityBytes") == _bytes(fs, "capacityBytes")
    logs = rootfs = volumes = hidden = 0
    largest: list[VolumeUse] = []
    for pod in (summary.get("pods") or [])[:_PODS]:
        if not isinstance(pod, dict):
            continue
        ref = mapping(pod, "podRef")
        for container in pod.get("containers") or []:
            if isinstance(container, dict):
                logs += _bytes(mapping(container, "logs"))
                rootfs += _bytes(mapping(container, "rootfs"))
        for volume in pod.get("volume") or []:
            if not isinstance(volume, dict) or volume.get("pvcRef"):
                continue
            used = _bytes(volume)
            volumes += used
            if not readable(str(ref.get("namespace", ""))):
                hidden += used
                continue
            largest.append(
                VolumeUse(
                    namespace=str(ref.get("namespace", "")),
                    pod=str(ref.get("name", "")),
                    volume=str(volume.get("name", "")),
                    used_bytes=used,
                )
            )
    if hidden:
        largest.append(VolumeUse(namespace="", pod="", volume=OTHER_NAMESPACES, used_bytes=hidden))
    largest.sort(key=lambda v: -v["used_bytes"])
    image_used = _bytes(image_fs)
    unused_images = 0 if images_in_use is None else max(0, image_used - images_in_use)
    reclaimable = logs + (unused_images if shared else 0)
    images = image_used if shared else 0
    unattributed = max(0, _bytes(fs) - logs - images - rootfs - volumes)
    return {
        "node": node,
        "fs_used_bytes": _bytes(fs),
        "fs_capacity_bytes": _bytes(fs, "capacityBytes"),
        "fs_available_bytes": _bytes(fs, "availableBytes"),
        "image_fs_used_bytes": image_used,
        "image_fs_shared": shared,
        "images_in_use_bytes": -1 if images_in_use is None else images_in_use,
        "logs_bytes": logs,
        "rootfs_bytes": rootfs,
        "volumes_bytes": volumes,
        "unattributed_bytes": unattributed,
        "reclaimable_bytes": reclaimable,
        "workload_bytes": volumes + rootfs,
        "largest_volumes": largest[:_TOP],
    }


def _gib(value: int) -> float:
    return round(value / _GIB, 2)


@dataclass(frozen=True)
class KubernetesNodeStats:
    session: KubernetesSession
    name: str = NODE_STATS_TOOL
    description: str = (
        "What fills one node's disk, from its kubelet's stats summary: node and image"
        " filesystem use, container logs, containers' writable layers and node-local volumes"
        " (emptyDir), what no pod accounts for (hostPath data, host files), with the largest"
        " volumes and their pods. Use it for disk pressure."
    )
    arguments: type[KubernetesNodeStatsArgs] = KubernetesNodeStatsArgs

    @guarded
    async def run(self, args: KubernetesNodeStatsArgs, ctx: ToolContext) -> ToolResult:
        session = self.session
        await session.resolve("v1/Node", None, ctx)  # the scope checks of a Node read
        summary = await session.reader.node_stats(args.node, ctx.timeout)
        in_use = await _images_in_use(session, args.node, ctx.timeout)
        facts = node_stats_facts(
            args.node, summary, session.scope.namespaces.allows, images_in_use=in_use
        )
        if ctx.observed is not None:
            ctx.observed.add_node_stats(facts)
        return session.answer(_view(facts))


async def _images_in_use(session: KubernetesSession, node: str, timeout: float) -> int | None:
    """The bytes of the node's images its Pods use (every Pod bound to it, in any
    namespace: only the sum is kept); None when the Node or its Pods could not all be
    read, so that no image counts as reclaimable."""
    reader = session.reader
    try:
        session.scope.check_kind("Pod")
        node_obj = await reader.get(await reader.resolve("v1/Node", timeout), None, node, timeout)
        found = await reader.list(
            await reader.resolve("v1/Pod", timeout),
            None,
            timeout,
            field_selector=f"spec.nodeName={node}",
            limit=_PODS,
        )
    except (KubeFailure, ScopeRefusal):
        return None
    if (found.get("metadata") or {}).get("continue"):
        return None  # more Pods than one page: some images' use is unknown
    pods = [p for p in found.get("items") or [] if isinstance(p, dict)]
    return images_in_use_bytes(node_obj, pods)


def _view(facts: NodeStatsFacts) -> dict[str, Any]:
    capacity = facts["fs_capacity_bytes"]
    used = facts["fs_used_bytes"]
    return {
        "kind": "NodeStatsSummary",
        "node": facts["node"],
        "node_fs_gib": {"used": _gib(used), "capacity": _gib(capacity)},
        "node_fs_used_percent": round(100 * used / capacity, 1) if capacity else None,
        "image_fs_used_gib": _gib(facts["image_fs_used_bytes"]),
        "image_fs_on_node_fs": facts["image_fs_shared"],
        "images_in_use_gib": (
            _gib(facts["images_in_use_bytes"]) if facts["images_in_use_bytes"] >= 0 else "unknown"
        ),
        "reclaimable_gib": _gib(facts["reclaimable_bytes"]),
        "container_logs_gib": _gib(facts["logs_bytes"]),
        "container_writable_layers_gib": _gib(facts["rootfs_bytes"]),
        "node_local_volumes_gib": _gib(facts["volumes_bytes"]),
        "unattributed_gib": _gib(facts["unattributed_bytes"]),
        "largest_volumes": [
            {"namespace": v["namespace"], "pod": v["pod"], "volume": v["volume"]}
            | {"used_gib": _gib(v["used_bytes"])}
            for v in facts["largest_volumes"]
        ],
    }
