"""Node actions: restart the kubelet, reboot, drain, cordon, clean up the disk.

Design notes: docs/internals.md (`analyst/actions/nodes.py`).
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.actions.base import Objection, Situation, Values, target_values
from hapi_grpc.analyst.conversation import LIST, Step

__all__ = ["CleanupNode", "DrainNode", "NodeOnly", "RestartNode"]

_LEASE_NAMESPACE = "kube-node-lease"
_NODE_STATS = "kubernetes_node_stats"


def _node(situation: Situation) -> dict[str, Any]:
    node = situation.findings.node
    if node and situation.findings.target_kind == "Node":
        return node
    return {}


def _values(node: dict[str, Any]) -> Values:
    values = target_values("Node", "")
    values["node"] = node["name"]
    return values


class NodeOnly:
    """An action on the Node whose premises read nothing beyond the Node itself."""

    def reads(self, situation: Situation) -> list[Step]:
        return []

    def values(self, situation: Situation) -> Values | Objection:
        node = _node(situation)
        return _values(node) if node else Objection("the evidence names no Node to act on")


class RestartNode(NodeOnly):
    def reads(self, situation: Situation) -> list[Step]:
        node = _node(situation)
        if not node:
            return []
        found = situation.reads.got("Lease", _LEASE_NAMESPACE, node["name"])
        return [found] if isinstance(found, tuple) else []


class CleanupNode(NodeOnly):
    def reads(self, situation: Situation) -> list[Step]:
        node = _node(situation)
        if not node or not situation.offered(_NODE_STATS):
            return []
        arguments = {"node": node["name"]}
        if situation.reads.returned(_NODE_STATS, arguments) is None:
            return [(_NODE_STATS, arguments)]
        return []


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
        needed: list[Step] = []
        everyone = {"kind": "Node"}
        if situation.reads.returned(LIST, everyone) is None:
            needed.append((LIST, {**everyone, "limit": 50}))
        for namespace in self._namespaces(situation):
            on_node = {
                "kind": "Pod",
                "namespace": namespace,
                "field_selector": f"spec.nodeName={node['name']}",
            }
            if situation.reads.returned(LIST, on_node) is None:
                needed.append((LIST, {**on_node, "limit": 50}))
            budgets = {"kind": "PodDisruptionBudget", "namespace": namespace}
            if situation.reads.returned(LIST, budgets) is None:
                needed.append((LIST, {**budgets, "limit": 20}))
        return needed
