"""Kubernetes objects as the API serves them, for premise scenarios, and the gate's verdict.

Each builder returns the JSON an API server answers (what the tools record), so a
scenario reads as the cluster would: a Deployment, its ReplicaSets by revision, its
Pods with container states, Nodes, events, logs, metrics series, kubelet stats.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hapi_grpc.domain.catalog import ParameterSpec, WorkflowSchema
from hapi_grpc.domain.incident import Incident, SignalInfo
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.premises import PremiseBook
from hapi_grpc.domain.selection_gate import AllowUnverified, SelectionGate, Veto
from hapi_grpc.toolsets.kubernetes.facts import record_object

NS = "shop"


def container(
    name: str, image: str = "app:1", memory: str = "512Mi", **extra: Any
) -> dict[str, Any]:
    return {"name": name, "image": image, "resources": {"limits": {"memory": memory}}, **extra}


def template(
    *containers: dict[str, Any], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web"}, "annotations": annotations or {}},
        "spec": {"containers": list(containers)},
    }


def deployment(
    name: str, revision: int, tmpl: dict[str, Any], *, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": labels or {},
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
        },
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": tmpl},
        "status": {"replicas": 2, "readyReplicas": 0},
    }


def replica_set(
    deploy: str, hash_: str, revision: int, tmpl: dict[str, Any], available: int = 0
) -> dict[str, Any]:
    labelled = {
        **tmpl,
        "metadata": {
            **tmpl["metadata"],
            "labels": {**tmpl["metadata"]["labels"], "pod-template-hash": hash_},
        },
    }
    return {
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{deploy}-{hash_}",
            "namespace": NS,
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
            "ownerReferences": [{"kind": "Deployment", "name": deploy, "controller": True}],
        },
        "spec": {"replicas": 2 if available else 0, "template": labelled},
        "status": {"replicas": available, "availableReplicas": available},
    }


def pod(
    name: str,
    owner: str,
    containers: list[dict[str, Any]],
    statuses: list[dict[str, Any]],
    *,
    node: str = "node-1",
    owner_kind: str = "ReplicaSet",
    ready: bool = False,
    phase: str = "Running",
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"app": "web"},
            "ownerReferences": [{"kind": owner_kind, "name": owner, "controller": True}],
        },
        "spec": {"nodeName": node, "containers": containers},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": statuses,
        },
    }


def oom_status(name: str, restarts: int = 4) -> dict[str, Any]:
    return {
        "name": name,
        "restartCount": restarts,
        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    }


def crash_status(name: str, exit_code: int = 1, restarts: int = 6) -> dict[str, Any]:
    return {
        "name": name,
        "restartCount": restarts,
        "lastState": {"terminated": {"reason": "Error", "exitCode": exit_code}},
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    }


def running_status(name: str) -> dict[str, Any]:
    return {"name": name, "restartCount": 0, "ready": True, "state": {"running": {}}}


def node(
    name: str,
    ready: str = "True",
    *,
    pressure: tuple[str, ...] = (),
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
    since: str = "2026-11-20T10:00:00Z",
) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": ready, "lastTransitionTime": since}]
    conditions += [{"type": p, "status": "True"} for p in pressure]
    return {
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"unschedulable": unschedulable, "taints": taints or []},
        "status": {"conditions": conditions},
    }


def schema(action_type: str, *names: str, workflow_id: str = "wf-v1") -> WorkflowSchema:
    """A workflow as real catalogs declare it: an action type and parameters, no CEL."""
    return WorkflowSchema(
        workflow_id=workflow_id,
        action_type=action_type,
        parameters=tuple(ParameterSpec(name=n) for n in names),
    )


def record(*objects: dict[str, Any]) -> Observed:
    observed = Observed()
    for obj in objects:
        record_object(observed, obj)
    return observed


def verdict(
    observed: Observed,
    workflow: WorkflowSchema,
    params: dict[str, Any],
    book: PremiseBook | None = None,
    allow: AllowUnverified | None = None,
) -> Veto | None:
    """What the selection gate says of `workflow` with `params` on `observed` (the
    shipped packs unless `book`; `allow`: the policy's allowance of unverified ones)."""
    incident = Incident("rr-scene", SignalInfo("Incident", None, "", namespace=NS))
    gate = SelectionGate(incident, observed, (), book, allow)
    return asyncio.run(gate.check(workflow.workflow_id, workflow, params))


def oomkilled_statefulset() -> Observed:
    """shop/ledger, a StatefulSet whose only container was OOMKilled at 1536Mi."""
    statefulset = {
        "kind": "StatefulSet",
        "metadata": {"name": "ledger", "namespace": NS},
        "spec": {"replicas": 1, "template": template(container("ledger", memory="1536Mi"))},
        "status": {"replicas": 1},
    }
    killed = pod(
        "ledger-0",
        "ledger",
        [container("ledger", memory="1536Mi")],
        [oom_status("ledger")],
        owner_kind="StatefulSet",
    )
    return record(statefulset, killed)
