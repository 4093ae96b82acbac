"""Kubernetes objects as the observed record keeps them: parsed facts, no secrets.

Every string passes through `sensitive.redact`; Secret data and ConfigMap
values are never read into the record (only the references to them).
"""

from __future__ import annotations

import time
from typing import Any

from hapi_grpc.domain.observed.kinds import EXTRA_KINDS, epoch, gitops_managed
from hapi_grpc.domain.sensitive import redact
from hapi_grpc.domain.spec_hash import spec_hash

__all__ = ["object_facts", "object_key"]

_TEXT = 300
_ITEMS = 20
_WORKLOADS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"})
# Taints the node lifecycle controller and the kubelet set and remove themselves
# (conditions, cordon, cloud initialisation), as opposed to taints a person placed.
_AUTOMATIC_TAINTS = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
# What differs between two revisions of one pod template without changing what runs:
# the ReplicaSet's own label and the `kubectl rollout restart` stamp.
_TEMPLATE_LABEL = "pod-template-hash"
_RESTART_STAMP = "kubectl.kubernetes.io/restartedAt"
_PROBES = ("liveness", "readiness", "startup")


def _map(obj: Any, key: str) -> dict[str, Any]:
    """`obj[key]` when it is a mapping, else an empty one."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return redact(" ".join(str(value).split()))[:_TEXT]


def object_key(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind}/{namespace or ''}/{name}"


def _strings(mapping: Any) -> dict[str, str]:
    if not isinstance(mapping, dict):
        return {}
    return {str(k): _text(v) for k, v in list(mapping.items())[:50]}


def _conditions(items: Any) -> list[dict[str, str]]:
    out = []
    for c in (items or [])[:_ITEMS]:
        if isinstance(c, dict):
            out.append(
                {
                    "type": str(c.get("type", "")),
                    "status": str(c.get("status", "")),
                    "reason": _text(c.get("reason", "")),
                    "message": _text(c.get("message", "")),
                    "changed_at": epoch(c.get("lastTransitionTime")),
                }
            )
    return out


def _state(state: Any) -> tuple[str, str, str]:
    """(state, reason, message) of a container state: ('waiting', 'CrashLoopBackOff', ...)."""
    if not isinstance(state, dict) or not state:
        return "", "", ""
    name, detail = next(iter(state.items()))
    detail = detail if isinstance(detail, dict) else {}
    return str(name), _text(detail.get("reason", "")), _text(detail.get("message", ""))


def _termination(last: Any) -> dict[str, Any]:
    terminated = last.get("terminated") if isinstance(last, dict) else None
    if not isinstance(terminated, dict):
        return {
            "reason": "",
            "exit_code": -1,
            "message": "",
            "started": "",
            "finished": "",
            "ran_seconds": -1.0,
        }
    code = terminated.get("exitCode")
    started, finished = terminated.get("startedAt"), terminated.get("finishedAt")
    ran = epoch(finished) - epoch(started) if epoch(started) and epoch(finished) else -1.0
    return {
        "reason": _text(terminated.get("reason", "")),
        "exit_code": code if isinstance(code, int) else -1,
        "message": _text(terminated.get("message", "")),
        "started": str(started or ""),
        "finished": str(finished or ""),
        # How long the instance ran before it ended (-1 when unknown).
        "ran_seconds": ran,
    }


def _resources(spec: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    resources = _map(spec, "resources")
    return _strings(resources.get("limits")), _strings(resources.get("requests"))


def _probe_timing(spec: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Each probe's timing with the API's defaults filled in."""
    timing = {}
    for name in _PROBES:
        probe = spec.get(f"{name}Probe")
        if isinstance(probe, dict):
            timing[name] = {
                "initial_delay_seconds": _int(probe.get("initialDelaySeconds"), 0),
                "period_seconds": _int(probe.get("periodSeconds"), 10),
                "failure_threshold": _int(probe.get("failureThreshold"), 3),
                "timeout_seconds": _int(probe.get("timeoutSeconds"), 1),
            }
    return timing


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _container(spec: dict[str, Any], status: dict[str, Any] | None) -> dict[str, Any]:
    limits, requests = _resources(spec)
    timing = _probe_timing(spec)
    out: dict[str, Any] = {
        "name": str(spec.get("name", "")),
        "image": _text(spec.get("image", "")),
        "limits": limits,
        "requests": requests,
        "probes": list(timing),
        "probe_timing": timing,
    }
    status = status or {}
    state, reason, message = _state(status.get("state"))
    out.update(
        ready=bool(status.get("ready", False)),
        restarts=int(status.get("restartCount") or 0),
        state=state,
        state_reason=reason,
        state_message=message,
        last_termination=_termination(status.get("lastState")),
    )
    return out


def _containers(spec: dict[str, Any], statuses: Any, key: str) -> list[dict[str, Any]]:
    by_name = {s.get("name"): s for s in statuses or [] if isinstance(s, dict)}
    return [
        _container(c, by_name.get(c.get("name")))
        for c in (spec.get(key) or [])[:_ITEMS]
        if isinstance(c, dict)
    ]


def _config_refs(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The ConfigMaps and Secrets a Pod spec references (volumes, env, envFrom)."""
    refs: list[dict[str, Any]] = []

    def add(kind: str, ref: Any, via: str) -> None:
        if isinstance(ref, dict) and ref.get("name"):
            refs.append(
                {
                    "kind": kind,
                    "name": str(ref["name"]),
                    "optional": bool(ref.get("optional")),
                    "via": via,
                }
            )

    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        add("ConfigMap", volume.get("configMap"), "volume")
        secret = volume.get("secret")
        if isinstance(secret, dict):
            add(
                "Secret",
                {"name": secret.get("secretName"), "optional": secret.get("optional")},
                "volume",
            )
        for source in (volume.get("projected") or {}).get("sources") or []:
            if isinstance(source, dict):
                add("ConfigMap", source.get("configMap"), "volume")
                add("Secret", source.get("secret"), "volume")
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if not isinstance(container, dict):
            continue
        for item in container.get("envFrom") or []:
            if isinstance(item, dict):
                add("ConfigMap", item.get("configMapRef"), "envFrom")
                add("Secret", item.get("secretRef"), "envFrom")
        for var in container.get("env") or []:
            source = var.get("valueFrom") if isinstance(var, dict) else None
            if isinstance(source, dict):
                add("ConfigMap", source.get("configMapKeyRef"), "env")
                add("Secret", source.get("secretKeyRef"), "env")
    return refs[:_ITEMS]


def _pod(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    status = _map(obj, "status")
    meta = _map(obj, "metadata")
    deleting = epoch(meta.get("deletionTimestamp"))
    # How long deletion has been pending when the Pod was read, and the grace it has.
    out["deleting_seconds"] = max(time.time() - deleting, 0.0) if deleting else 0.0
    out["grace_period_seconds"] = _int(
        meta.get("deletionGracePeriodSeconds"), _int(spec.get("terminationGracePeriodSeconds"), 30)
    )
    refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
    controller = next((r for r in refs if r.get("controller")), refs[0] if refs else {})
    out["controller"] = {
        "kind": str(controller.get("kind", "")),
        "name": str(controller.get("name", "")),
    }
    out["phase"] = str(status.get("phase", ""))
    out["reason"] = _text(status.get("reason", ""))
    out["node"] = str(spec.get("nodeName") or "")
    out["containers"] = _containers(spec, status.get("containerStatuses"), "containers")
    out["init_containers"] = _containers(
        spec, status.get("initContainerStatuses"), "initContainers"
    )
    out["config_refs"] = _config_refs(spec)


def _node(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    out["unschedulable"] = bool(spec.get("unschedulable"))
    out["taints"] = [
        {
            "key": str(t.get("key", "")),
            "value": _text(t.get("value", "")),
            "effect": str(t.get("effect", "")),
            "automatic": str(t.get("key", "")).startswith(_AUTOMATIC_TAINTS),
        }
        for t in (spec.get("taints") or [])[:_ITEMS]
        if isinstance(t, dict)
    ]
    out["pressure"] = [
        c["type"] for c in out["conditions"] if c["type"] != "Ready" and c["status"] == "True"
    ]
    out["ready"] = next((c["status"] for c in out["conditions"] if c["type"] == "Ready"), "Unknown")


def _workload(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    status = _map(obj, "status")
    template = (spec.get("template") or {}).get("spec") or {}
    desired = spec.get("replicas", status.get("desiredNumberScheduled", 1))
    out["replicas"] = {
        "desired": desired if isinstance(desired, int) else 1,
        "ready": int(status.get("readyReplicas", status.get("numberReady", 0)) or 0),
        "available": int(status.get("availableReplicas", status.get("numberAvailable", 0)) or 0),
    }
    out["paused"] = bool(spec.get("paused"))
    out["selector"] = _strings(_map(spec, "selector").get("matchLabels"))
    out["template_containers"] = _containers(template, None, "containers")
    out["config_refs"] = _config_refs(template)
    revision = out["annotations"].get("deployment.kubernetes.io/revision", "")
    out["revision"] = int(revision) if isinstance(revision, str) and revision.isdigit() else 0
    out["template_hash"] = _template_hash(spec.get("template"))
    out["claim_templates"] = [
        str(_map(c, "metadata").get("name", ""))
        for c in (spec.get("volumeClaimTemplates") or [])[:_ITEMS]
        if isinstance(c, dict)
    ]


def _template_hash(template: Any) -> str:
    """The hash of a pod template as it runs: without the ReplicaSet's own label and
    the restart stamp, so a `rollout restart` of a template hashes like the template."""
    if not isinstance(template, dict):
        return ""
    meta = dict(_map(template, "metadata"))
    meta["labels"] = {k: v for k, v in _map(meta, "labels").items() if k != _TEMPLATE_LABEL}
    meta["annotations"] = {
        k: v for k, v in _map(meta, "annotations").items() if k != _RESTART_STAMP
    }
    return spec_hash({"metadata": meta, "spec": _map(template, "spec")})


def _autoscaler(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    status = _map(obj, "status")
    out["min_replicas"] = int(spec.get("minReplicas") or 1)
    out["max_replicas"] = int(spec.get("maxReplicas") or 0)
    out["current_replicas"] = int(status.get("currentReplicas") or 0)
    target = _map(spec, "scaleTargetRef")
    out["target"] = {"kind": str(target.get("kind", "")), "name": str(target.get("name", ""))}


def _claim(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    status = _map(obj, "status")
    requests = (spec.get("resources") or {}).get("requests") or {}
    out["phase"] = str(status.get("phase", ""))
    out["storage_request"] = str(requests.get("storage", ""))
    out["capacity"] = str((status.get("capacity") or {}).get("storage", ""))
    out["storage_class"] = str(spec.get("storageClassName") or "")


def object_facts(obj: dict[str, Any]) -> dict[str, Any]:
    """One object as the record keeps it (see `docs/preconditions.md`)."""
    meta = _map(obj, "metadata")
    kind = str(obj.get("kind", ""))
    status = _map(obj, "status")
    out: dict[str, Any] = {
        "kind": kind,
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
        "labels": _strings(meta.get("labels")),
        "annotations": _strings(
            {
                k: v
                for k, v in (meta.get("annotations") or {}).items()
                if k != "kubectl.kubernetes.io/last-applied-configuration"
            }
        ),
        "owners": [
            {"kind": str(o.get("kind", "")), "name": str(o.get("name", ""))}
            for o in (meta.get("ownerReferences") or [])[:5]
            if isinstance(o, dict)
        ],
        "owner_chain": [],
        "deleting": bool(meta.get("deletionTimestamp")),
        "conditions": _conditions(status.get("conditions")),
    }
    out["gitops"] = gitops_managed(out["labels"], out["annotations"])
    out["helm_release"] = out["annotations"].get("meta.helm.sh/release-name", "")
    if kind == "Pod":
        _pod(obj, out)
    elif kind == "Node":
        _node(obj, out)
    elif kind in _WORKLOADS:
        _workload(obj, out)
    elif kind == "HorizontalPodAutoscaler":
        _autoscaler(obj, out)
    elif kind == "PersistentVolumeClaim":
        _claim(obj, out)
    elif kind in EXTRA_KINDS:
        EXTRA_KINDS[kind](obj, out)
    return out


def _workload_of(pod: dict[str, Any], by_key: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The workload that manages a Pod: its controller, or the Deployment of its
    ReplicaSet when that ReplicaSet was read, or the top of its owner chain."""
    controller = pod.get("controller") or {}
    kind, name = controller.get("kind", ""), controller.get("name", "")
    if kind == "ReplicaSet":
        replica_set = by_key.get(object_key("ReplicaSet", pod["namespace"], name))
        owners = replica_set.get("owners") if replica_set else None
        if owners:
            return {"kind": owners[0]["kind"], "name": owners[0]["name"]}
        chain = pod.get("owner_chain") or []
        if len(chain) > 1:
            top = str(chain[-1]).split("/")
            if len(top) == 4:
                return {"kind": top[2], "name": top[3]}
    return {"kind": kind, "name": name}


def pods_with_workloads(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Pods among `objects`, each with `workload` {kind, name} (`_workload_of`)."""
    pods = [o for o in objects if o["kind"] == "Pod"]
    if not pods:
        return []
    by_key = {
        object_key(o["kind"], o["namespace"], o["name"]): o
        for o in objects
        if o["kind"] == "ReplicaSet"
    }
    return [{**p, "workload": _workload_of(p, by_key)} for p in pods]
