"""Views of Kubernetes objects written for a model to read, not raw dumps.

Design notes: docs/internals.md (`toolsets/kubernetes/views.py`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hapi_grpc.domain.sensitive import REDACTED, hides_value, redact_head

__all__ = ["age", "object_view", "owner_refs", "redact_env", "replicas"]

_TEXT_CHARS = 300
_MAX_ITEMS = 20
_MAX_DEPTH = 6
_NOISY_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "control-plane.alpha.kubernetes.io/leader",
)
_NOISY_METADATA = frozenset(
    {"managedFields", "resourceVersion", "uid", "selfLink", "generateName", "finalizers"}
)
WORKLOAD_KINDS = frozenset(
    {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController"}
)


def _text(value: Any, limit: int = _TEXT_CHARS) -> str:
    text, cut = redact_head(" ".join(str(value).split()), limit)  # cut first, then redact
    return text[: limit - 1] + "…" if cut else text


def _clean(value: Any, depth: int = 0) -> Any:
    """A bounded, redacted copy of a JSON value (lists cut, strings shortened)."""
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= _MAX_DEPTH:
        return "…"
    if isinstance(value, dict):
        return {
            str(k): REDACTED if hides_value(value, k) else _clean(v, depth + 1)
            for k, v in value.items()
            if k not in _NOISY_METADATA
        }
    if isinstance(value, list):
        shown = [_clean(v, depth + 1) for v in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            shown.append(f"… {len(value) - _MAX_ITEMS} more")
        return shown
    return _text(value)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """'3d4h', '12m', '40s' since an RFC 3339 time; '' when absent or unreadable."""
    if not timestamp:
        return ""
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = int(((now or datetime.now(UTC)) - moment).total_seconds())
    if seconds < 0:
        return "in the future"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def owner_refs(meta: dict[str, Any]) -> list[str]:
    return [
        f"{o.get('kind')}/{o.get('name')}"
        for o in meta.get("ownerReferences") or []
        if isinstance(o, dict)
    ][:5]


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {"name": meta.get("name")}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    if meta.get("creationTimestamp"):
        out["created"] = meta["creationTimestamp"]
        out["age"] = age(meta["creationTimestamp"])
    if meta.get("deletionTimestamp"):
        out["deleting_since"] = meta["deletionTimestamp"]
    if meta.get("labels"):
        out["labels"] = _clean(dict(list(meta["labels"].items())[:_MAX_ITEMS]))
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k not in _NOISY_ANNOTATIONS and len(str(v)) <= 2 * _TEXT_CHARS
    }
    if annotations:
        out["annotations"] = _clean(dict(list(annotations.items())[:_MAX_ITEMS]))
    owners = owner_refs(meta)
    if owners:
        out["owners"] = owners
    return out


def _conditions(conditions: Any) -> list[str]:
    """One line per condition: `Ready=False (ContainersNotReady: ...) since <time>`."""
    lines = []
    for c in (conditions or [])[:_MAX_ITEMS]:
        if not isinstance(c, dict):
            continue
        line = f"{c.get('type')}={c.get('status')}"
        detail = ": ".join(str(p) for p in (c.get("reason"), c.get("message")) if p)
        if detail:
            line += f" ({_text(detail)})"
        since = c.get("lastTransitionTime") or c.get("lastHeartbeatTime")
        if since:
            line += f" since {since}"
        lines.append(line)
    return lines


def redact_env(env: Any) -> list[str]:
    """Env vars as `NAME=value`; Secret-sourced ones show the reference only."""
    shown = []
    for var in (env or [])[:40]:
        if not isinstance(var, dict):
            continue
        name = str(var.get("name", ""))
        source = var.get("valueFrom") or {}
        if "value" in var:
            value = REDACTED if hides_value(var, "value") else _text(var["value"], 120)
            shown.append(f"{name}={value}")
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"] or {}
            shown.append(f"{name} from secret {ref.get('name')} key {ref.get('key')}")
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"] or {}
            shown.append(f"{name} from configmap {ref.get('name')} key {ref.get('key')}")
        elif "fieldRef" in source:
            shown.append(f"{name} from field {(source['fieldRef'] or {}).get('fieldPath')}")
        elif "resourceFieldRef" in source:
            ref = source["resourceFieldRef"] or {}
            shown.append(f"{name} from resource {ref.get('resource')}")
        else:
            shown.append(f"{name} (unset)")
    return shown


def _env_from(items: Any) -> list[str]:
    shown = []
    for item in (items or [])[:10]:
        if isinstance(item, dict):
            for key, label in (
                ("secretRef", "all keys of secret"),
                ("configMapRef", "all keys of configmap"),
            ):
                if key in item:
                    shown.append(f"{label} {(item[key] or {}).get('name')}")
    return shown


def _state(state: Any) -> str:
    if not isinstance(state, dict) or not state:
        return ""
    (name, detail), *_ = state.items()
    detail = detail or {}
    parts = [name]
    if detail.get("reason"):
        parts.append(str(detail["reason"]))
    if "exitCode" in detail:
        parts.append(f"exit code {detail['exitCode']}")
    text = " ".join(parts)
    if detail.get("message"):
        text += f": {_text(detail['message'])}"
    when = detail.get("finishedAt") or detail.get("startedAt")
    if when:
        text += f" (at {when})"
    return text


def _last_termination(last: Any) -> dict[str, Any] | None:
    terminated = (last or {}).get("terminated") if isinstance(last, dict) else None
    if not terminated:
        return None
    out = {
        "reason": terminated.get("reason"),
        "exit_code": terminated.get("exitCode"),
        "started": terminated.get("startedAt"),
        "finished": terminated.get("finishedAt"),
    }
    if terminated.get("message"):
        out["message"] = _text(terminated["message"])
    return {k: v for k, v in out.items() if v is not None}


def _container(spec: dict[str, Any], status: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.get("name"), "image": spec.get("image")}
    resources = spec.get("resources") or {}
    for key in ("requests", "limits"):
        if resources.get(key):
            out[key] = _clean(resources[key])
    if status:
        out["ready"] = status.get("ready")
        out["restarts"] = status.get("restartCount", 0)
        out["state"] = _state(status.get("state"))
        last = _last_termination(status.get("lastState"))
        if last:
            out["last_termination"] = last
        if status.get("image") and status.get("image") != spec.get("image"):
            out["running_image"] = status["image"]
    env = redact_env(spec.get("env")) + _env_from(spec.get("envFrom"))
    if env:
        out["env"] = env
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if spec.get(probe):
            out.setdefault("probes", []).append(probe.removesuffix("Probe"))
    return out


def _containers(spec: dict[str, Any], statuses: Any, key: str) -> list[dict[str, Any]]:
    by_name = {s.get("name"): s for s in statuses or [] if isinstance(s, dict)}
    return [_container(c, by_name.get(c.get("name"))) for c in (spec.get(key) or [])[:_MAX_ITEMS]]


def _pod(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out["phase"] = status.get("phase")
    for key in ("reason", "message", "nominatedNodeName", "qosClass"):
        if status.get(key):
            out[key] = _text(status[key])
    out["node"] = spec.get("nodeName") or "(not scheduled)"
    out["conditions"] = _conditions(status.get("conditions"))
    init = _containers(spec, status.get("initContainerStatuses"), "initContainers")
    if init:
        out["init_containers"] = init
    out["containers"] = _containers(spec, status.get("containerStatuses"), "containers")
    for key in ("serviceAccountName", "priorityClassName", "restartPolicy"):
        if spec.get(key):
            out[key] = spec[key]
    if spec.get("imagePullSecrets"):
        out["image_pull_secrets"] = [s.get("name") for s in spec["imagePullSecrets"]][:5]
    if spec.get("nodeSelector"):
        out["node_selector"] = _clean(spec["nodeSelector"])
    if spec.get("tolerations"):
        out["tolerations"] = len(spec["tolerations"])
    volumes = [v.get("name") for v in spec.get("volumes") or [] if isinstance(v, dict)]
    if volumes:
        out["volumes"] = volumes[:_MAX_ITEMS]


def _node(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    out["ready"] = next(
        (c.get("status") for c in conditions if c.get("type") == "Ready"), "Unknown"
    )
    out["conditions"] = _conditions(conditions)
    out["pressure"] = [
        c.get("type") for c in conditions if c.get("type") != "Ready" and c.get("status") != "False"
    ]
    out["unschedulable"] = bool(spec.get("unschedulable"))
    out["taints"] = [
        f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"
        for t in spec.get("taints") or []
        if isinstance(t, dict)
    ][:_MAX_ITEMS]
    for key in ("allocatable", "capacity"):
        if status.get(key):
            out[key] = _clean(status[key])
    info = status.get("nodeInfo") or {}
    if info.get("kubeletVersion"):
        out["kubelet_version"] = info["kubeletVersion"]
    addresses = [f"{a.get('type')}={a.get('address')}" for a in status.get("addresses") or []]
    if addresses:
        out["addresses"] = addresses[:5]


def replicas(obj: dict[str, Any]) -> dict[str, Any]:
    """A workload's replica counts (a DaemonSet's: its scheduled Pods)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if obj.get("kind") == "DaemonSet":
        return {
            "desired": status.get("desiredNumberScheduled", 0),
            "ready": status.get("numberReady", 0),
            "updated": status.get("updatedNumberScheduled", 0),
            "available": status.get("numberAvailable", 0),
            "unavailable": status.get("numberUnavailable", 0),
        }
    counts = {
        "desired": spec.get("replicas", 1),
        "current": status.get("replicas", 0),
        "ready": status.get("readyReplicas", 0),
        "updated": status.get("updatedReplicas", 0),
        "available": status.get("availableReplicas", 0),
    }
    if status.get("unavailableReplicas"):
        counts["unavailable"] = status["unavailableReplicas"]
    return counts


def _workload(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out["replicas"] = replicas(obj)
    generation = (obj.get("metadata") or {}).get("generation")
    if generation and status.get("observedGeneration") not in (None, generation):
        out["rollout"] = (
            f"generation {generation} not yet observed ({status.get('observedGeneration')})"
        )
    out["conditions"] = _conditions(status.get("conditions"))
    strategy = spec.get("strategy") or spec.get("updateStrategy")
    if strategy:
        out["strategy"] = _clean(strategy)
    selector = (spec.get("selector") or {}).get("matchLabels")
    if selector:
        out["selector"] = ",".join(f"{k}={v}" for k, v in selector.items())
    if spec.get("paused"):
        out["paused"] = True
    template = (spec.get("template") or {}).get("spec") or {}
    out["containers"] = _containers(template, None, "containers")


def _job(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if obj.get("kind") == "CronJob":
        out["schedule"] = spec.get("schedule")
        out["suspend"] = bool(spec.get("suspend"))
        out["last_schedule"] = status.get("lastScheduleTime")
        out["last_success"] = status.get("lastSuccessfulTime")
        out["active"] = len(status.get("active") or [])
        return
    for key in ("active", "succeeded", "failed"):
        out[key] = status.get(key, 0)
    out["backoff_limit"] = spec.get("backoffLimit")
    out["conditions"] = _conditions(status.get("conditions"))
    template = (spec.get("template") or {}).get("spec") or {}
    out["containers"] = _containers(template, None, "containers")


def _configmap(obj: dict[str, Any], out: dict[str, Any]) -> None:
    # Values are never shown: operators keep credentials in ConfigMaps too.
    out["data_keys"] = sorted(obj.get("data") or {})[:50]
    if obj.get("binaryData"):
        out["binary_data_keys"] = sorted(obj["binaryData"])[:50]


def _generic(obj: dict[str, Any], out: dict[str, Any]) -> None:
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        if key == "status" and isinstance(value, dict) and "conditions" in value:
            value = {**value, "conditions": _conditions(value["conditions"])}
        out[key] = _clean(value)


def object_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The model's view of one object (docs/internals.md)."""
    kind = str(obj.get("kind", ""))
    out: dict[str, Any] = {"kind": kind, **_metadata(obj)}
    _VIEWS.get(kind, _generic)(obj, out)
    return {k: v for k, v in out.items() if v not in (None, "", [], {})}


# kind -> what its view shows besides the metadata; any other kind: `_generic`.
_VIEWS = {"Pod": _pod, "Node": _node, "Job": _job, "CronJob": _job, "ConfigMap": _configmap}
_VIEWS |= dict.fromkeys(WORKLOAD_KINDS, _workload)
