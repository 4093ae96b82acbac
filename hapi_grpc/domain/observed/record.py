"""`Observed`: the record one investigation's tools fill (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import re2

from hapi_grpc.domain.observed.kubernetes import object_facts, object_key, pods_with_workloads
from hapi_grpc.domain.observed.node_stats import node_stats_facts
from hapi_grpc.domain.observed.series import query_metrics, series_subject
from hapi_grpc.domain.sensitive import redact
from hapi_grpc.domain.spec_hash import spec_hash

__all__ = ["EMPTY_VIEW", "Observed"]

# Bounds: the record never outgrows what the tools' own output caps allow.
_MAX_OBJECTS = 200
_MAX_EVENTS = 200
_MAX_LOGS = 40
_MAX_METRICS = 40
_MAX_ALERTS = 100
_LINE = 300
# An event's message whole, up to the API's own limit (NoteLengthLimit): the end of a
# kubelet's pull or start failure is what says why.
_NOTE = 1024
# A log line that blames the configuration (a missing key, an invalid setting):
# the premise of a configuration fix. RE2: linear in the line's length.
_CONFIG_ERROR = re2.compile(
    r"(?i)\b(config(uration)?|settings?|env(ironment)? var(iable)?)\b.{0,80}"
    r"\b(missing|invalid|unknown|required|not set|malformed|cannot parse|parse error|bad)\b"
    r"|\b(missing|invalid|unknown|required|malformed)\b.{0,40}"
    r"\b(config(uration)?|settings?|env(ironment)? var(iable)?)\b"
)
# A line stating how long start-up takes, in the forms application frameworks log it
# ("Started App in 91.2 seconds", "started in 2.3s", "ready in 850 ms", "startup took
# 95s", "warming cache (est. 40s)"): the time a liveness probe must leave a starting
# container. RE2: linear.
_STARTUP = re2.compile(
    r"(?i)\b(?:start(?:ed|ing|up)?|start-up|boot(?:ed|ing)?|ready|initiali[sz](?:ed|ing|ation)"
    r"|warm(?:ed|ing)?(?:[- ]?up)?)\b[^0-9\n]{0,60}?"
    r"(?:\b(?:in|took|after|est\.?|estimated|expected|approx\.?|about)\s*|~\s*)"
    r"([0-9]{1,6}(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b"
)
_MAX_NODE_STATS = 20
_VIEWED = frozenset({"Pod", "Node"})  # and workloads: what has `template_containers`
_NUMERIC = (int, float)


def _map(obj: Any, key: str) -> dict[str, Any]:
    """`obj[key]` when it is a mapping, else an empty one."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _startup_seconds(lines: list[str]) -> float:
    """The longest start-up time the lines state, in seconds; 0.0 when none does."""
    longest = 0.0
    for line in lines:
        found = _STARTUP.search(line[:2000])
        if found:
            unit = found.group(2).lower()
            if unit == "ms" or unit.startswith("milli"):
                factor = 0.001
            else:
                factor = 60.0 if unit.startswith("m") else 1.0
            longest = max(longest, float(found.group(1)) * factor)
    return longest


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, _NUMERIC):
        return None
    return float(value)


@dataclass
class Observed:
    """What the tools read, keyed and bounded; `activation()` is the CEL view."""

    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    node_stats: dict[str, dict[str, Any]] = field(default_factory=dict)  # by node name
    # Counts changes: what was judged on one version holds until the next read.
    version: int = 0
    # `spec_hash` of each recorded object's spec: what remediation history compares.
    spec_hashes: dict[str, str] = field(default_factory=dict)
    _view: dict[str, Any] | None = field(default=None, repr=False)

    # --- recording (the tools) -----------------------------------------------------

    def _changed(self) -> None:
        self._view = None
        self.version += 1

    def record_object(self, obj: dict[str, Any], kind: str = "") -> None:
        """An object as read (raw API JSON); a later read of the same object replaces it."""
        if not isinstance(obj, dict):
            return
        if kind and not obj.get("kind"):
            obj = {**obj, "kind": kind}
        facts = object_facts(obj)
        key = object_key(facts["kind"], facts["namespace"], facts["name"])
        if key not in self.objects and len(self.objects) >= _MAX_OBJECTS:
            return
        old = self.objects.get(key)
        if old and old.get("owner_chain") and not facts["owner_chain"]:
            facts["owner_chain"] = old["owner_chain"]
        self.objects[key] = facts
        spec = obj.get("spec")
        if isinstance(spec, dict):
            self.spec_hashes[key] = spec_hash(spec)
        self._changed()

    def record_owner_chain(
        self, kind: str, namespace: str | None, name: str, chain: list[str]
    ) -> None:
        """The owner chain read from `kind/name` up (`namespace/group/Kind/name` refs)."""
        key = object_key(kind, namespace, name)
        if key in self.objects:
            self.objects[key]["owner_chain"] = list(chain[:6])
            self._changed()

    def record_event(self, kind: str, namespace: str, name: str, event: dict[str, Any]) -> None:
        """One folded event about `kind/name`."""
        if len(self.events) >= _MAX_EVENTS:
            return
        count = event.get("count")
        self.events.append(
            {
                "kind": kind,
                "namespace": namespace,
                "name": name,
                "type": str(event.get("type", "")),
                "reason": str(event.get("reason", "")),
                "message": redact(str(event.get("message", "")))[:_NOTE],
                "count": count if isinstance(count, int) else 1,
            }
        )
        self._changed()

    def record_log(
        self, namespace: str, pod: str, container: str, *, previous: bool, lines: list[str]
    ) -> None:
        """Facts of a container log read: its size and the lines blaming configuration."""
        if len(self.logs) >= _MAX_LOGS:
            return
        blamed = [redact(line)[:_LINE] for line in lines if _CONFIG_ERROR.search(line)][:5]
        self.logs.append(
            {
                "namespace": namespace,
                "pod": pod,
                "container": container,
                "previous": previous,
                "lines_read": len(lines),
                "config_errors": blamed,
                "last_line": redact(lines[-1])[:_LINE] if lines else "",
                "startup_seconds": _startup_seconds(lines),
            }
        )
        self._changed()

    def record_metric(self, query: str, summary: dict[str, Any]) -> None:
        """A query's summary: per series its labels, min/max/last and trend direction."""
        if len(self.metrics) >= _MAX_METRICS:
            return
        series = []
        names = query_metrics(query)
        for s in (summary.get("series") or [])[:20]:
            if not isinstance(s, dict):
                continue
            trend = _map(s, "trend")
            labels = {str(k): str(v) for k, v in (s.get("labels") or {}).items()}
            series.append(
                {
                    "labels": labels,
                    "min": _number(s.get("min")),
                    "max": _number(s.get("max")),
                    "last": _number(s.get("last", s.get("value"))),
                    "trend": str(trend.get("direction", "")),
                    "slope_per_minute": _number(trend.get("slope_per_minute")),
                    **series_subject(query, names, labels),
                }
            )
        self.metrics.append({"query": query[:_LINE], "series": series})
        self._changed()

    def record_alerts(self, summary: dict[str, Any]) -> None:
        """Alerts firing now, as the Alertmanager tool read them."""
        for alert in summary.get("alerts") or []:
            if len(self.alerts) >= _MAX_ALERTS or not isinstance(alert, dict):
                break
            self.alerts.append(
                {
                    "alertname": str(alert.get("alertname", "")),
                    "severity": str(alert.get("severity", "")),
                    "labels": {str(k): str(v) for k, v in (alert.get("labels") or {}).items()},
                }
            )
        self._changed()

    def record_node_stats(self, node: str, summary: dict[str, Any]) -> None:
        """A node's kubelet stats summary: what fills its disk (`node_stats`)."""
        if node not in self.node_stats and len(self.node_stats) >= _MAX_NODE_STATS:
            return
        self.node_stats[node] = node_stats_facts(node, summary)
        self._changed()

    # --- reading (the checks) ------------------------------------------------------

    def spec_hash_of(self, kind: str, namespace: str | None, name: str) -> str:
        """The spec hash of `kind/name` as read in this investigation; "" when not read."""
        return self.spec_hashes.get(object_key(kind, namespace, name), "")

    def owners_of(self, kind: str, namespace: str | None, name: str) -> list[str]:
        """The owner chain read from `kind/name` up (`namespace/group/Kind/name` refs)."""
        found = self.objects.get(object_key(kind, namespace, name)) or {}
        chain = found.get("owner_chain")
        return [str(ref) for ref in chain] if isinstance(chain, list) else []

    @property
    def cluster_evidence(self) -> bool:
        """True once any object was read from the cluster."""
        return bool(self.objects)

    def activation(self) -> dict[str, Any]:
        """The record as CEL's `observed` (built once per change; `EMPTY_VIEW` when empty)."""
        if self._view is None:
            if (
                self.objects
                or self.events
                or self.logs
                or self.metrics
                or self.alerts
                or self.node_stats
            ):
                self._view = _view_of(
                    list(self.objects.values()),
                    self.events,
                    self.logs,
                    self.metrics,
                    self.alerts,
                    list(self.node_stats.values()),
                )
            else:
                self._view = EMPTY_VIEW
        return self._view


def _view_of(
    objects: list[dict[str, Any]],
    events: list[dict[str, Any]],
    logs: list[dict[str, Any]],
    metrics: list[dict[str, Any]],
    alerts: list[dict[str, Any]],
    node_stats: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "evidence": bool(objects),
        "objects": objects,
        # The objects none of the views below holds (no object converted twice when
        # an expression reads both).
        "other_objects": [
            o for o in objects if o["kind"] not in _VIEWED and "template_containers" not in o
        ],
        "pods": pods_with_workloads(objects),
        "nodes": [o for o in objects if o["kind"] == "Node"],
        "workloads": [o for o in objects if "template_containers" in o],
        "events": list(events),
        "logs": list(logs),
        "metrics": list(metrics),
        "alerts": list(alerts),
        "node_stats": list(node_stats),
    }


# The view of every empty record: one object shared by all (never mutated), so an
# investigation that read nothing holds no view of its own, and the conditions that
# depend on `observed` alone have one value on it (`domain.preconditions`).
EMPTY_VIEW: dict[str, Any] = _view_of([], [], [], [], [], [])
