"""Node actions: restart the kubelet, reboot, drain, cordon, clean up the disk.

Design notes: docs/internals.md (`analyst/actions/nodes.py`).
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.conversation import EVENTS, LIST, Step, pending
from hapi_grpc.domain.observed.facts import NodeStatsFacts

__all__ = ["CleanupNode", "DrainNode", "NodeOnly", "RestartNode"]

_LEASE_NAMESPACE = "kube-node-lease"
_NODE_STATS = "kubernetes_node_stats"
# The kubelet's events when image garbage collection frees less than it must, and the
# words of its message when it found no image eligible (none unused by a container).
_IMAGE_GC_FAILED = frozenset({"FreeDiskSpaceFailed", "ImageGCFailed"})
_NOTHING_ELIGIBLE = "only found 0 bytes eligible to free"
_GIB = 1024**3


def _dominates(stats: NodeStatsFacts, freed: int) -> bool:
    """`freed` bytes are most of the node's used disk and more than its workloads' data
    (the CleanupNode pack's test)."""
    return freed > stats["workload_bytes"] and 2 * freed > stats["fs_used_bytes"]


def _node(situation: Situation) -> dict[str, Any]:
    node = situation.findings.node
    if node and situation.findings.target_kind == "Node":
        return node
    return {}


def _values(node: dict[str, Any]) -> Values:
    values = target_values("Node", "")
    values["node"] = node["name"]
    return values


class NodeOnly(Evidence):
    """An action on the Node whose premises read nothing beyond the Node itself."""

    def values(self, situation: Situation) -> Values | Objection:
        node = _node(situation)
        return _values(node) if node else Objection("the evidence names no Node to act on")


class RestartNode(NodeOnly):
    def reads(self, situation: Situation) -> list[Step]:
        node = _node(situation)
        if not node:
            return []
        return pending(situation.reads.got("Lease", _LEASE_NAMESPACE, node["name"]))


class CleanupNode(NodeOnly):
    """Reads the node's stats summary and its events: the kubelet reports there when
    its image garbage collection found nothing eligible to free (every image is in use
    by a container), and a clean-up then reclaims only container logs."""

    def reads(self, situation: Situation) -> list[Step]:
        node = _node(situation)
        if not node:
            return []
        needed = situation.reads.unread(EVENTS, {"kind": "Node", "name": node["name"]}, limit=20)
        if situation.offered(_NODE_STATS):
            needed += situation.reads.unread(_NODE_STATS, {"node": node["name"]})
        return needed

    def values(self, situation: Situation) -> Values | Objection:
        values = super().values(situation)
        if isinstance(values, Objection):
            return values
        name = str(values["node"])
        refused = next(
            (
                e
                for e in situation.reads.observed.events
                if e["kind"] == "Node"
                and e["name"] == name
                and e["reason"] in _IMAGE_GC_FAILED
                and _NOTHING_ELIGIBLE in e["message"]
            ),
            None,
        )
        stats = situation.reads.observed.node_stats.get(name)
        if stats and not _dominates(stats, stats["reclaimable_bytes"]):
            in_use = stats["images_in_use_bytes"]
            images = "unknown" if in_use < 0 else f"{in_use / _GIB:.1f} GiB"
            return Objection(
                f"on node {name} what a clean-up frees ({stats['reclaimable_bytes'] / _GIB:.1f}"
                f" GiB: container logs and images no Pod on it uses; images in use {images})"
                f" is not most of the {stats['fs_used_bytes'] / _GIB:.1f} GiB used"
            )
        if refused and not (stats and _dominates(stats, stats["logs_bytes"])):
            return Objection(
                f"the kubelet of node {name} reported {refused['reason']}: {refused['message']}"
                " (every image is used by a container); a clean-up reclaims only container logs,"
                " which are not most of its disk"
            )
        return values


class DrainNode(NodeOnly):
    def _namespaces(self, situation: Situation) -> list[str]:
        named = {situation.subject.namespace, *situation.subject.affected_namespaces} | {
            p["namespace"] for p in situation.reads.objects("Pod")
        }
        return sorted(n for n in named if n)[:5]

    def reads(self, situation: Situation) -> list[Step]:
        node = _node(situation)
        if not node:
            return []
        reads = situation.reads
        needed = reads.unread(LIST, {"kind": "Node"}, limit=50)
        for namespace in self._namespaces(situation):
            on_node = f"spec.nodeName={node['name']}"
            pods = {"kind": "Pod", "namespace": namespace, "field_selector": on_node}
            needed += reads.unread(LIST, pods, limit=50)
            budgets = {"kind": "PodDisruptionBudget", "namespace": namespace}
            needed += reads.unread(LIST, budgets, limit=20)
        return needed
