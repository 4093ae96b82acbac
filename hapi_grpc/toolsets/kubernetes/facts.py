"""How the `kubernetes` tools fill the observed record with the objects they read.

Design notes: docs/internals.md (`toolsets/kubernetes/facts.py`).
"""

from __future__ import annotations

import time
from typing import Any

from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.observed.facts import (
    ConditionFacts,
    ConfigRef,
    ContainerFacts,
    NodeFacts,
    ObjectFacts,
    PodFacts,
    ProbeTiming,
    Rollout,
    Termination,
    WorkloadFacts,
)
from hapi_grpc.domain.sensitive import redact
from hapi_grpc.domain.spec_hash import spec_hash
from hapi_grpc.toolsets.kubernetes.kinds import EXTRA_KINDS, epoch, gitops_managed, integer, mapping

__all__ = ["controller_ref", "object_facts", "record_object"]

_TEXT = 300
_ITEMS = 20
# A Deployment's Progressing reasons while its new ReplicaSet is not yet available.
_ROLLING_REASONS = frozenset({"ReplicaSetUpdated", "NewReplicaSetCreated", "FoundNewReplicaSet"})
_CLAIMED_ORDINALS = 32  # claims listed per StatefulSet volume template
_WORKLOADS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"})
# Taints the node lifecycle controller and the kubelet set and remove themselves
# (conditions, cordon, cloud initialisation), as opposed to taints a person placed.
_AUTOMATIC_TAINTS = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
# What differs between two revisions of one pod template without changing what runs:
# the ReplicaSet's own label and the `kubectl rollout restart` stamp.
_TEMPLATE_LABEL = "pod-template-hash"
_RESTART_STAMP = "kubectl.kubernetes.io/restartedAt"
_PROBES = ("liveness", "readiness", "startup")


def record_object(observed: Observed, obj: Any, kind: str = "") -> None:
    """An object as read (raw API JSON); a later read of the same object replaces it."""
    if not isinstance(obj, dict):
        return
    if kind and not obj.get("kind"):
        obj = {**obj, "kind": kind}
    spec = obj.get("spec")
    observed.add_object(object_facts(obj), spec_hash(spec) if isinstance(spec, dict) else "")


def controller_ref(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The owner reference that manages an object: its controller, else its first owner."""
    refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def _text(value: Any) -> str:
    return redact(" ".join(str(value).split()))[:_TEXT]


def _texts(value: Any) -> dict[str, str]:
    """The first 50 entries of a mapping, values as `_text`."""
    if not isinstance(value, dict):
        return {}
    return {str(k): _text(v) for k, v in list(value.items())[:50]}


def _conditions(items: Any) -> list[ConditionFacts]:
    return [
        ConditionFacts(
            type=str(c.get("type", "")),
            status=str(c.get("status", "")),
            reason=_text(c.get("reason", "")),
            message=_text(c.get("message", "")),
            changed_at=epoch(c.get("lastTransitionTime")),
            # A Deployment's conditions also say when their reason last changed (a
            # rollout completing keeps Progressing True, so only this time moves).
            updated_at=epoch(c.get("lastUpdateTime") or c.get("lastTransitionTime")),
        )
        for c in (items or [])[:_ITEMS]
        if isinstance(c, dict)
    ]


def _state(state: Any) -> tuple[str, str, str]:
    """(state, reason, message) of a container state: ('waiting', 'CrashLoopBackOff', ...)."""
    if not isinstance(state, dict) or not state:
        return "", "", ""
    name, detail = next(iter(state.items()))
    detail = detail if isinstance(detail, dict) else {}
    return str(name), _text(detail.get("reason", "")), _text(detail.get("message", ""))


def _termination(last: Any) -> Termination:
    terminated = last.get("terminated") if isinstance(last, dict) else None
    if not isinstance(terminated, dict):
        return Termination(
            reason="", exit_code=-1, message="", started="", finished="", ran_seconds=-1.0
        )
    code = terminated.get("exitCode")
    started, finished = terminated.get("startedAt"), terminated.get("finishedAt")
    ran = epoch(finished) - epoch(started) if epoch(started) and epoch(finished) else -1.0
    return Termination(
        reason=_text(terminated.get("reason", "")),
        exit_code=code if isinstance(code, int) else -1,
        message=_text(terminated.get("message", "")),
        started=str(started or ""),
        finished=str(finished or ""),
        ran_seconds=ran,
    )


def _probe_timing(spec: dict[str, Any]) -> dict[str, ProbeTiming]:
    """Each probe's timing with the API's defaults filled in."""
    timing = {}
    for name in _PROBES:
        probe = spec.get(f"{name}Probe")
        if isinstance(probe, dict):
            timing[name] = ProbeTiming(
                initial_delay_seconds=integer(probe.get("initialDelaySeconds"), 0),
                period_seconds=integer(probe.get("periodSeconds"), 10),
                failure_threshold=integer(probe.get("failureThreshold"), 3),
                timeout_seconds=integer(probe.get("timeoutSeconds"), 1),
            )
    return timing


def _container(spec: dict[str, Any], status: dict[str, Any] | None) -> ContainerFacts:
    resources = mapping(spec, "resources")
    timing = _probe_timing(spec)
    status = status or {}
    state, reason, message = _state(status.get("state"))
    return ContainerFacts(
        name=str(spec.get("name", "")),
        image=_text(spec.get("image", "")),
        limits=_texts(resources.get("limits")),
        requests=_texts(resources.get("requests")),
        probes=list(timing),
        probe_timing=timing,
        ready=bool(status.get("ready", False)),
        restarts=int(status.get("restartCount") or 0),
        state=state,
        state_reason=reason,
        state_message=message,
        last_termination=_termination(status.get("lastState")),
    )


def _containers(spec: dict[str, Any], statuses: Any, key: str) -> list[ContainerFacts]:
    by_name = {s.get("name"): s for s in statuses or [] if isinstance(s, dict)}
    return [
        _container(c, by_name.get(c.get("name")))
        for c in (spec.get(key) or [])[:_ITEMS]
        if isinstance(c, dict)
    ]


def _config_refs(spec: dict[str, Any]) -> list[ConfigRef]:
    """The ConfigMaps and Secrets a Pod spec references (volumes, env, envFrom)."""
    refs: list[ConfigRef] = []

    def add(kind: str, ref: Any, via: str) -> None:
        if isinstance(ref, dict) and ref.get("name"):
            refs.append(
                ConfigRef(
                    kind=kind, name=str(ref["name"]), optional=bool(ref.get("optional")), via=via
                )
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


def _pod(obj: dict[str, Any], out: ObjectFacts) -> PodFacts:
    spec, status, meta = mapping(obj, "spec"), mapping(obj, "status"), mapping(obj, "metadata")
    deleting = epoch(meta.get("deletionTimestamp"))
    controller = controller_ref(meta) or {}
    return PodFacts(
        **out,
        # How long deletion has been pending when the Pod was read, and the grace it has.
        deleting_seconds=max(time.time() - deleting, 0.0) if deleting else 0.0,
        grace_period_seconds=integer(
            meta.get("deletionGracePeriodSeconds"),
            integer(spec.get("terminationGracePeriodSeconds"), 30),
        ),
        controller={
            "kind": str(controller.get("kind", "")),
            "name": str(controller.get("name", "")),
        },
        phase=str(status.get("phase", "")),
        reason=_text(status.get("reason", "")),
        node=str(spec.get("nodeName") or ""),
        containers=_containers(spec, status.get("containerStatuses"), "containers"),
        init_containers=_containers(spec, status.get("initContainerStatuses"), "initContainers"),
        config_refs=_config_refs(spec),
        # The API server admits a Pod without one as the namespace's `default` account.
        service_account=str(
            spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        ),
    )


def _node(obj: dict[str, Any], out: ObjectFacts) -> NodeFacts:
    spec = mapping(obj, "spec")
    conditions = out["conditions"]
    return NodeFacts(
        **out,
        unschedulable=bool(spec.get("unschedulable")),
        taints=[
            {
                "key": str(t.get("key", "")),
                "value": _text(t.get("value", "")),
                "effect": str(t.get("effect", "")),
                "automatic": str(t.get("key", "")).startswith(_AUTOMATIC_TAINTS),
            }
            for t in (spec.get("taints") or [])[:_ITEMS]
            if isinstance(t, dict)
        ],
        pressure=[c["type"] for c in conditions if c["type"] != "Ready" and c["status"] == "True"],
        ready=next((c["status"] for c in conditions if c["type"] == "Ready"), "Unknown"),
    )


def _workload(obj: dict[str, Any], out: ObjectFacts) -> WorkloadFacts:
    spec, status = mapping(obj, "spec"), mapping(obj, "status")
    template = (spec.get("template") or {}).get("spec") or {}
    desired = spec.get("replicas", status.get("desiredNumberScheduled", 1))
    revision = out["annotations"].get("deployment.kubernetes.io/revision", "")
    templates = [
        str(mapping(c, "metadata").get("name", ""))
        for c in (spec.get("volumeClaimTemplates") or [])[:_ITEMS]
        if isinstance(c, dict)
    ]
    return WorkloadFacts(
        **out,
        replicas={
            "desired": desired if isinstance(desired, int) else 1,
            "ready": int(status.get("readyReplicas", status.get("numberReady", 0)) or 0),
            "available": int(
                status.get("availableReplicas", status.get("numberAvailable", 0)) or 0
            ),
        },
        paused=bool(spec.get("paused")),
        selector=_texts(mapping(spec, "selector").get("matchLabels")),
        template_containers=_containers(template, None, "containers"),
        config_refs=_config_refs(template),
        revision=int(revision) if isinstance(revision, str) and revision.isdigit() else 0,
        template_hash=_template_hash(spec.get("template")),
        claim_templates=templates,
        claims=_stateful_claims(out, templates, desired),
        rollout=_rollout(out, status),
    )


def _rollout(out: ObjectFacts, status: dict[str, Any]) -> Rollout:
    """Whether the workload's latest template is still rolling out, and when a finished
    rollout completed (0 when its kind does not say: only a Deployment's Progressing
    condition keeps that time)."""
    if out["kind"] == "Deployment":
        progressing = next((c for c in out["conditions"] if c["type"] == "Progressing"), None)
        reason = progressing["reason"] if progressing else ""
        done = (
            progressing["updated_at"] if reason == "NewReplicaSetAvailable" and progressing else 0.0
        )
        return Rollout(under_way=reason in _ROLLING_REASONS, completed_at=done)
    if out["kind"] == "StatefulSet":
        current, update = status.get("currentRevision"), status.get("updateRevision")
        behind = _fewer(status, "updatedReplicas", "replicas")
        return Rollout(
            under_way=bool(current and update and current != update) or behind, completed_at=0.0
        )
    if out["kind"] == "DaemonSet":
        behind = _fewer(status, "updatedNumberScheduled", "desiredNumberScheduled")
        return Rollout(under_way=behind, completed_at=0.0)
    return Rollout(under_way=False, completed_at=0.0)


def _fewer(status: dict[str, Any], updated: str, wanted: str) -> bool:
    """`status[updated] < status[wanted]`, when both are counts."""
    have, want = status.get(updated), status.get(wanted)
    return isinstance(have, int) and isinstance(want, int) and have < want


def _stateful_claims(out: ObjectFacts, templates: list[str], replicas: Any) -> list[str]:
    """The claims a StatefulSet's Pods use now: `<template>-<name>-<ordinal>` for each
    ordinal below its replicas (a claim kept after a scale-in is not one of them)."""
    if out["kind"] != "StatefulSet" or not isinstance(replicas, int):
        return []
    ordinals = range(min(max(replicas, 0), _CLAIMED_ORDINALS))
    return [f"{t}-{out['name']}-{i}" for t in templates if t for i in ordinals]


def _template_hash(template: Any) -> str:
    """The hash of a pod template as it runs: without the ReplicaSet's own label and
    the restart stamp, so a `rollout restart` of a template hashes like the template."""
    if not isinstance(template, dict):
        return ""
    meta = dict(mapping(template, "metadata"))
    meta["labels"] = {k: v for k, v in mapping(meta, "labels").items() if k != _TEMPLATE_LABEL}
    meta["annotations"] = {
        k: v for k, v in mapping(meta, "annotations").items() if k != _RESTART_STAMP
    }
    return spec_hash({"metadata": meta, "spec": mapping(template, "spec")})


def object_facts(obj: dict[str, Any]) -> ObjectFacts:
    """One object as the record keeps it (see `docs/preconditions.md`)."""
    meta = mapping(obj, "metadata")
    kind = str(obj.get("kind", ""))
    labels = _texts(meta.get("labels"))
    annotations = _texts(
        {
            k: v
            for k, v in (meta.get("annotations") or {}).items()
            if k != "kubectl.kubernetes.io/last-applied-configuration"
        }
    )
    out = ObjectFacts(
        kind=kind,
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        labels=labels,
        annotations=annotations,
        owners=[
            {"kind": str(o.get("kind", "")), "name": str(o.get("name", ""))}
            for o in (meta.get("ownerReferences") or [])[:5]
            if isinstance(o, dict)
        ],
        owner_chain=[],
        deleting=bool(meta.get("deletionTimestamp")),
        conditions=_conditions(mapping(obj, "status").get("conditions")),
        gitops=gitops_managed(labels, annotations),
        helm_release=annotations.get("meta.helm.sh/release-name", ""),
    )
    facts = _KINDS.get(kind)
    return facts(obj, out) if facts is not None else out


# kind -> its facts, from the object and the facts every object has.
_KINDS = {"Pod": _pod, "Node": _node, **dict.fromkeys(_WORKLOADS, _workload), **EXTRA_KINDS}
