"""Compact forms: one line per listed object, and events folded by reason and message.

Design notes: docs/internals.md (`toolsets/kubernetes/summaries.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.sensitive import redact
from hapi_grpc.toolsets.kubernetes.views import WORKLOAD_KINDS, age, owner_refs, replicas

__all__ = ["NOTE_LENGTH_LIMIT", "FoldedEvent", "fold_events", "list_line"]

_MESSAGE_CHARS = 400
# An event's message is at most this long (the API's NoteLengthLimit): kept whole for
# the service's record, cut to `_MESSAGE_CHARS` in the view.
NOTE_LENGTH_LIMIT = 1024


def _short(text: Any, limit: int) -> str:
    text = redact(" ".join(str(text or "").split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ready_condition(status: dict[str, Any]) -> str:
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            return f"Ready={c.get('status')}"
    return ""


def _pod_line(obj: dict[str, Any]) -> list[str]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    statuses = [s for s in status.get("containerStatuses") or [] if isinstance(s, dict)]
    ready = sum(1 for s in statuses if s.get("ready"))
    total = len(spec.get("containers") or []) or len(statuses)
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    parts = [f"phase={status.get('phase')}", f"ready={ready}/{total}", f"restarts={restarts}"]
    reasons = []
    for s in statuses:
        for key in ("waiting", "terminated"):
            reason = ((s.get("state") or {}).get(key) or {}).get("reason")
            if reason:
                reasons.append(f"{s.get('name')}:{reason}")
        last = ((s.get("lastState") or {}).get("terminated") or {}).get("reason")
        if last:
            reasons.append(f"{s.get('name')}:last={last}")
    if reasons:
        parts.append("status=" + ",".join(reasons[:4]))
    parts.append(f"node={spec.get('nodeName') or '-'}")
    return parts


def _workload_line(obj: dict[str, Any]) -> list[str]:
    counts = replicas(obj)
    return [
        f"ready={counts['ready']}/{counts['desired']}",
        f"updated={counts['updated']}",
        f"available={counts['available']}",
    ]


def _node_line(obj: dict[str, Any]) -> list[str]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    parts = [_ready_condition(status) or "Ready=Unknown"]
    pressure = [
        c.get("type")
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("type") != "Ready" and c.get("status") != "False"
    ]
    if pressure:
        parts.append("pressure=" + ",".join(str(p) for p in pressure))
    if spec.get("unschedulable"):
        parts.append("unschedulable")
    taints = spec.get("taints") or []
    if taints:
        parts.append(f"taints={len(taints)}")
    return parts


def list_line(obj: dict[str, Any]) -> str:
    """`name key=value ... age=5m` for one listed object."""
    meta = obj.get("metadata") or {}
    kind = obj.get("kind", "")
    if kind in _LINES:
        parts = _LINES[kind](obj)
    else:
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        parts = [p for p in (_ready_condition(status or {}),) if p]
    owners = owner_refs(meta)
    if owners:
        parts.append("owner=" + owners[0])
    created = age(meta.get("creationTimestamp"))
    if created:
        parts.append(f"age={created}")
    return _short(" ".join([str(meta.get("name")), *parts]), 300)


# kind -> the parts of its line after the name; any other kind: its Ready condition.
_LINES = {"Pod": _pod_line, "Node": _node_line, **dict.fromkeys(WORKLOAD_KINDS, _workload_line)}


@dataclass
class FoldedEvent:
    type: str
    reason: str
    object: str
    message: str
    count: int = 0
    first_seen: str = ""
    last_seen: str = ""

    def view(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "reason": self.reason,
            "object": self.object,
            "message": _short(self.message, _MESSAGE_CHARS),
            "count": self.count,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
        }
        if self.last_seen:
            out["last_seen_ago"] = age(self.last_seen)
        return {k: v for k, v in out.items() if v not in ("", None)}


def _event_fields(event: dict[str, Any]) -> tuple[str, str, str, str, int, str, str]:
    """(type, reason, object, message, count, first, last) of either event API."""
    meta = event.get("metadata") or {}
    target = event.get("involvedObject") or event.get("regarding") or {}
    obj = f"{target.get('kind')}/{target.get('name')}"
    message = event.get("message") or event.get("note") or ""
    series = event.get("series") or {}
    count = int(event.get("count") or series.get("count") or event.get("deprecatedCount") or 1)
    last = (
        event.get("lastTimestamp")
        or series.get("lastObservedTime")
        or event.get("deprecatedLastTimestamp")
        or event.get("eventTime")
        or meta.get("creationTimestamp")
        or ""
    )
    first = (
        event.get("firstTimestamp")
        or event.get("deprecatedFirstTimestamp")
        or event.get("eventTime")
        or meta.get("creationTimestamp")
        or last
    )
    return (
        str(event.get("type") or ""),
        str(event.get("reason") or ""),
        obj,
        _short(message, NOTE_LENGTH_LIMIT),
        count,
        str(first),
        str(last),
    )


def _moment(text: str) -> str:
    # RFC 3339 times compare as text once the fractional part is dropped.
    return text.split(".", 1)[0].rstrip("Z")


def fold_events(*event_lists: list[dict[str, Any]]) -> list[FoldedEvent]:
    """Events of both APIs folded by (object, reason, message), newest first.

    An events.k8s.io/v1 Event is also served by core/v1; the same object seen
    twice (same uid) counts once.
    """
    folded: dict[tuple[str, str, str], FoldedEvent] = {}
    seen: set[str] = set()
    for events in event_lists:
        for event in events:
            if not isinstance(event, dict):
                continue
            uid = str((event.get("metadata") or {}).get("uid") or "")
            if uid and uid in seen:
                continue
            if uid:
                seen.add(uid)
            kind, reason, obj, message, count, first, last = _event_fields(event)
            entry = folded.setdefault(
                (obj, reason, message), FoldedEvent(kind, reason, obj, message)
            )
            entry.count += count
            if first and (not entry.first_seen or _moment(first) < _moment(entry.first_seen)):
                entry.first_seen = first
            if last and (not entry.last_seen or _moment(last) > _moment(entry.last_seen)):
                entry.last_seen = last
    return sorted(folded.values(), key=lambda e: _moment(e.last_seen), reverse=True)
