"""`Observed`: the record one investigation's tools fill (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.domain.observed.facts import (
    AlertFacts,
    EventFacts,
    LogFacts,
    MetricFacts,
    NodeStatsFacts,
    ObjectFacts,
    ObservedView,
    PodView,
    Ref,
)

__all__ = ["EMPTY_VIEW", "Observed", "object_key"]

# Bounds: the record never outgrows what the tools' own output caps allow.
_MAX_OBJECTS = 200
_MAX_EVENTS = 200
_MAX_LOGS = 40
_MAX_METRICS = 40
_MAX_ALERTS = 100
_MAX_NODE_STATS = 20
_VIEWED = frozenset({"Pod", "Node"})  # and workloads: what has `template_containers`


def object_key(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind}/{namespace or ''}/{name}"


@dataclass
class Observed:
    """What the tools read, as typed facts (`facts.py`), keyed and bounded;
    `activation()` is the CEL view."""

    objects: dict[str, ObjectFacts] = field(default_factory=dict)
    events: list[EventFacts] = field(default_factory=list)
    logs: list[LogFacts] = field(default_factory=list)
    metrics: list[MetricFacts] = field(default_factory=list)
    alerts: list[AlertFacts] = field(default_factory=list)
    node_stats: dict[str, NodeStatsFacts] = field(default_factory=dict)  # by node name
    # Counts changes: what was judged on one version holds until the next read.
    version: int = 0
    # `spec_hash` of each recorded object's spec: what remediation history compares.
    spec_hashes: dict[str, str] = field(default_factory=dict)
    _view: ObservedView | None = field(default=None, repr=False)

    # --- recording (the toolsets: `hapi_grpc/toolsets/*/facts.py`) -------------------

    def _changed(self) -> None:
        self._view = None
        self.version += 1

    def add_object(self, facts: ObjectFacts, spec_hash: str = "") -> None:
        """An object's facts; a later read of the same object replaces them (keeping
        the owner chain read before, when this read has none)."""
        key = object_key(facts["kind"], facts["namespace"], facts["name"])
        if key not in self.objects and len(self.objects) >= _MAX_OBJECTS:
            return
        old = self.objects.get(key)
        if old and old["owner_chain"] and not facts["owner_chain"]:
            facts["owner_chain"] = old["owner_chain"]
        self.objects[key] = facts
        if spec_hash:
            self.spec_hashes[key] = spec_hash
        self._changed()

    def add_owner_chain(
        self, kind: str, namespace: str | None, name: str, chain: list[str]
    ) -> None:
        """The owner chain read from `kind/name` up (`namespace/group/Kind/name` refs)."""
        key = object_key(kind, namespace, name)
        if key in self.objects:
            self.objects[key]["owner_chain"] = list(chain[:6])
            self._changed()

    def add_event(self, facts: EventFacts) -> None:
        if len(self.events) < _MAX_EVENTS:
            self.events.append(facts)
            self._changed()

    def add_log(self, facts: LogFacts) -> None:
        if len(self.logs) < _MAX_LOGS:
            self.logs.append(facts)
            self._changed()

    def add_metric(self, facts: MetricFacts) -> None:
        if len(self.metrics) < _MAX_METRICS:
            self.metrics.append(facts)
            self._changed()

    def add_alerts(self, alerts: list[AlertFacts]) -> None:
        self.alerts.extend(alerts[: max(_MAX_ALERTS - len(self.alerts), 0)])
        self._changed()

    def add_node_stats(self, facts: NodeStatsFacts) -> None:
        node = facts["node"]
        if node in self.node_stats or len(self.node_stats) < _MAX_NODE_STATS:
            self.node_stats[node] = facts
            self._changed()

    # --- reading (the checks) ------------------------------------------------------

    def spec_hash_of(self, kind: str, namespace: str | None, name: str) -> str:
        """The spec hash of `kind/name` as read in this investigation; "" when not read."""
        return self.spec_hashes.get(object_key(kind, namespace, name), "")

    def owners_of(self, kind: str, namespace: str | None, name: str) -> list[str]:
        """The owner chain read from `kind/name` up (`namespace/group/Kind/name` refs)."""
        found = self.objects.get(object_key(kind, namespace, name))
        return [str(ref) for ref in found["owner_chain"]] if found else []

    @property
    def cluster_evidence(self) -> bool:
        """True once any object was read from the cluster."""
        return bool(self.objects)

    def activation(self) -> ObservedView:
        """The record as CEL's `observed` (built once per change; `EMPTY_VIEW` when empty)."""
        if self._view is None:
            read = self.objects or self.events or self.logs or self.metrics or self.alerts
            self._view = _view_of(self) if read or self.node_stats else EMPTY_VIEW
        return self._view


def _workload_of(pod: Mapping[str, Any], by_key: dict[str, ObjectFacts]) -> Ref:
    """The workload that manages a Pod: its controller, or the Deployment of its
    ReplicaSet when that ReplicaSet was read, or the top of its owner chain."""
    controller = pod.get("controller") or {}
    kind, name = controller.get("kind", ""), controller.get("name", "")
    if kind == "ReplicaSet":
        replica_set = by_key.get(object_key("ReplicaSet", pod["namespace"], name))
        owners = replica_set["owners"] if replica_set else None
        if owners:
            return {"kind": owners[0]["kind"], "name": owners[0]["name"]}
        chain = pod.get("owner_chain") or []
        if len(chain) > 1:
            top = str(chain[-1]).split("/")
            if len(top) == 4:
                return {"kind": top[2], "name": top[3]}
    return {"kind": kind, "name": name}


def _pods_with_workloads(objects: list[ObjectFacts]) -> list[PodView]:
    """The Pods among `objects`, each with `workload` {kind, name} (`_workload_of`)."""
    pods = [o for o in objects if o["kind"] == "Pod"]
    if not pods:
        return []
    by_key = {
        object_key(o["kind"], o["namespace"], o["name"]): o
        for o in objects
        if o["kind"] == "ReplicaSet"
    }
    return [{**p, "workload": _workload_of(p, by_key)} for p in pods]  # type: ignore[typeddict-item]


def _view_of(record: Observed) -> ObservedView:
    objects = list(record.objects.values())
    return {
        "evidence": bool(objects),
        "objects": objects,
        # The objects none of the views below holds (no object converted twice when
        # an expression reads both).
        "other_objects": [
            o for o in objects if o["kind"] not in _VIEWED and "template_containers" not in o
        ],
        "pods": _pods_with_workloads(objects),
        "nodes": [o for o in objects if o["kind"] == "Node"],
        "workloads": [o for o in objects if "template_containers" in o],
        "events": list(record.events),
        "logs": list(record.logs),
        "metrics": list(record.metrics),
        "alerts": list(record.alerts),
        "node_stats": list(record.node_stats.values()),
    }


# The view of every empty record: one object shared by all (never mutated), so an
# investigation that read nothing holds no view of its own, and the conditions that
# depend on `observed` alone have one value on it (`domain.preconditions`).
EMPTY_VIEW: ObservedView = _view_of(Observed())
