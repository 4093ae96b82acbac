"""A node's disk use as its kubelet reports it (`/stats/summary`), as the record keeps it.

The kubelet's summary (read through the API server's node proxy) splits what fills
a node's filesystems. What a node clean-up (images, container logs, temp files)
can reclaim is the container logs and, when images share the node filesystem, the
image filesystem; what it must not touch is the workloads' data: their `emptyDir`
and other node-local volumes, and the writable layers of running containers.
`reclaimable_bytes` and `workload_bytes` are those two sums; the raw figures are
kept next to them. PersistentVolumeClaim-backed volumes are not on the node's
filesystem and count in neither.
"""

from __future__ import annotations

from typing import Any

__all__ = ["node_stats_facts"]

_PODS = 500
_TOP = 5


def _map(obj: Any, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _bytes(fs: dict[str, Any], key: str = "usedBytes") -> int:
    value = fs.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def node_stats_facts(node: str, summary: dict[str, Any]) -> dict[str, Any]:
    """The facts of one summary (see module docstring)."""
    stats = _map(summary, "node")
    fs = _map(stats, "fs")
    image_fs = _map(_map(stats, "runtime"), "imageFs")
    # One filesystem for both when the kubelet reports the same capacity for each.
    shared = bool(image_fs) and _bytes(image_fs, "capacityBytes") == _bytes(fs, "capacityBytes")
    logs = rootfs = volumes = 0
    largest: list[dict[str, Any]] = []
    for pod in (summary.get("pods") or [])[:_PODS]:
        if not isinstance(pod, dict):
            continue
        ref = _map(pod, "podRef")
        for container in pod.get("containers") or []:
            if isinstance(container, dict):
                logs += _bytes(_map(container, "logs"))
                rootfs += _bytes(_map(container, "rootfs"))
        for volume in pod.get("volume") or []:
            if not isinstance(volume, dict) or volume.get("pvcRef"):
                continue
            used = _bytes(volume)
            volumes += used
            largest.append(
                {
                    "namespace": str(ref.get("namespace", "")),
                    "pod": str(ref.get("name", "")),
                    "volume": str(volume.get("name", "")),
                    "used_bytes": used,
                }
            )
    largest.sort(key=lambda v: -v["used_bytes"])
    image_used = _bytes(image_fs)
    return {
        "node": node,
        "fs_used_bytes": _bytes(fs),
        "fs_capacity_bytes": _bytes(fs, "capacityBytes"),
        "fs_available_bytes": _bytes(fs, "availableBytes"),
        "image_fs_used_bytes": image_used,
        "image_fs_shared": shared,
        "logs_bytes": logs,
        "rootfs_bytes": rootfs,
        "volumes_bytes": volumes,
        "reclaimable_bytes": logs + (image_used if shared else 0),
        "workload_bytes": volumes + rootfs,
        "largest_volumes": largest[:_TOP],
    }
