"""Small builders of Kubernetes objects for the incident fixtures.

No controller-manager runs in the test cluster, so these create what it would
have: ReplicaSets owned by their Deployment, Pods owned by their ReplicaSet,
statuses written through the status subresource, and events.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import kubernetes

from tests.fakes.kubelet import FakeKubelet, register_node

MERGE = "application/merge-patch+json"
TIMEOUT = 30


def stamp(moment: datetime) -> str:
    """RFC 3339 in UTC, seconds precision (metav1.Time)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ensure_node(api: kubernetes.client.ApiClient, name: str, kubelet: FakeKubelet) -> None:
    """A Ready node served by `kubelet`, created unless it exists."""
    try:
        kubernetes.client.CoreV1Api(api).read_node(name, _request_timeout=TIMEOUT)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise
        register_node(api, name, kubelet)


def _owner(kind: str, name: str, uid: str, api_version: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _condition(kind: str, status: bool, reason: str, message: str = "") -> dict[str, Any]:
    now = stamp(datetime.now(UTC))
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }


def workload(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    template_hash: str,
    containers: list[dict[str, Any]],
    *,
    replicas: int,
    revision: int = 1,
    deployment_status: dict[str, int] | None = None,
    replicaset_status: dict[str, int] | None = None,
    available: bool = True,
    pull_secret: str | None = None,
    existing_deployment: bool = False,
) -> tuple[str, str]:
    """A Deployment (unless it exists) and its ReplicaSet `name-hash`; their names."""
    apps = kubernetes.client.AppsV1Api(api)
    labels = {"app": name}
    pod_spec: dict[str, Any] = {"containers": containers}
    if pull_secret:
        pod_spec["imagePullSecrets"] = [{"name": pull_secret}]
    if existing_deployment:
        deployment = apps.read_namespaced_deployment(name, namespace, _request_timeout=TIMEOUT)
    else:
        deployment = apps.create_namespaced_deployment(
            namespace,
            {
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "annotations": {"deployment.kubernetes.io/revision": str(revision)},
                },
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "strategy": {
                        "type": "RollingUpdate",
                        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                    },
                    "template": {"metadata": {"labels": labels}, "spec": pod_spec},
                },
            },
            _request_timeout=TIMEOUT,
        )
        status = {"observedGeneration": 1, "replicas": replicas, **(deployment_status or {})}
        status["conditions"] = [
            _condition(
                "Available",
                available,
                "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if available
                else "Deployment does not have minimum availability.",
            ),
            _condition(
                "Progressing",
                True,
                "ReplicaSetUpdated",
                f'ReplicaSet "{name}-{template_hash}" is progressing.',
            ),
        ]
        apps.patch_namespaced_deployment_status(
            name, namespace, {"status": status}, _content_type=MERGE, _request_timeout=TIMEOUT
        )
    rs_name = f"{name}-{template_hash}"
    rs_labels = {**labels, "pod-template-hash": template_hash}
    apps.create_namespaced_replica_set(
        namespace,
        {
            "metadata": {
                "name": rs_name,
                "labels": rs_labels,
                "annotations": {"deployment.kubernetes.io/revision": str(revision)},
                "ownerReferences": [
                    _owner("Deployment", name, str(deployment.metadata.uid), "apps/v1")
                ],
            },
            "spec": {
                # During a rollout the new ReplicaSet holds only part of the replicas.
                "replicas": (replicaset_status or {}).get("replicas", replicas),
                "selector": {"matchLabels": rs_labels},
                "template": {"metadata": {"labels": rs_labels}, "spec": pod_spec},
            },
        },
        _request_timeout=TIMEOUT,
    )
    rs_status = replicaset_status or {
        "replicas": replicas,
        "readyReplicas": (deployment_status or {}).get("readyReplicas", 0),
        "availableReplicas": (deployment_status or {}).get("availableReplicas", 0),
    }
    apps.patch_namespaced_replica_set_status(
        rs_name,
        namespace,
        {
            "status": {
                "observedGeneration": 1,
                "fullyLabeledReplicas": rs_status["replicas"],
                **rs_status,
            }
        },
        _content_type=MERGE,
        _request_timeout=TIMEOUT,
    )
    return name, rs_name


def container_status(
    container: dict[str, Any],
    *,
    ready: bool,
    restarts: int,
    state: dict[str, Any],
    last: dict[str, Any] | None = None,
) -> dict[str, Any]:
    pulled = "waiting" not in state or restarts > 0
    status: dict[str, Any] = {
        "name": container["name"],
        "image": container["image"],
        "imageID": f"{container['image'].split(':')[0]}@sha256:{'ab' * 32}" if pulled else "",
        "ready": ready,
        "started": "running" in state,
        "restartCount": restarts,
        "state": state,
        "lastState": last or {},
    }
    if pulled:
        status["containerID"] = f"containerd://{secrets.token_hex(32)}"
    return status


def _create_owned_pod(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    replicaset: str,
    spec: dict[str, Any],
) -> Any:
    """Create Pod `name` with `spec`, labelled and owned as `replicaset`'s own pods are."""
    apps = kubernetes.client.AppsV1Api(api)
    rs = apps.read_namespaced_replica_set(replicaset, namespace, _request_timeout=TIMEOUT)
    metadata = {
        "name": name,
        "labels": dict(rs.spec.selector.match_labels),
        "ownerReferences": [_owner("ReplicaSet", replicaset, str(rs.metadata.uid), "apps/v1")],
    }
    return kubernetes.client.CoreV1Api(api).create_namespaced_pod(
        namespace, {"metadata": metadata, "spec": spec}, _request_timeout=TIMEOUT
    )


def owned_pod(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    replicaset: str,
    containers: list[dict[str, Any]],
    node: str,
    *,
    phase: str,
    ready: bool,
    statuses: list[dict[str, Any]],
    pull_secret: str | None = None,
) -> str:
    """A Pod owned by `replicaset`, bound to `node`, with the given status; its uid."""
    core = kubernetes.client.CoreV1Api(api)
    spec: dict[str, Any] = {"nodeName": node, "containers": containers}
    if pull_secret:
        spec["imagePullSecrets"] = [{"name": pull_secret}]
    pod = _create_owned_pod(api, namespace, name, replicaset, spec)
    started = stamp(datetime.now(UTC) - timedelta(hours=1))
    conditions = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": started},
        {"type": "Initialized", "status": "True", "lastTransitionTime": started},
        {"type": "ContainersReady", "status": str(ready), "lastTransitionTime": started},
        {"type": "Ready", "status": str(ready), "lastTransitionTime": started},
    ]
    if not ready:
        for condition in conditions[2:]:
            condition.update(
                reason="ContainersNotReady",
                message=f"containers with unready status: [{containers[0]['name']}]",
            )
    core.patch_namespaced_pod_status(
        name,
        namespace,
        {
            "status": {
                "phase": phase,
                "conditions": conditions,
                "hostIP": "127.0.0.1",
                "podIP": "10.244.1.17",
                "startTime": started,
                "containerStatuses": statuses,
            }
        },
        _content_type=MERGE,
        _request_timeout=TIMEOUT,
    )
    return str(pod.metadata.uid)


def create_event(
    api: kubernetes.client.ApiClient,
    namespace: str,
    kind: str,
    name: str,
    event_type: str,
    reason: str,
    message: str,
    *,
    count: int = 1,
    uid: str | None = None,
    source: str = "kubelet",
    api_version: str = "v1",
) -> None:
    """A core/v1 Event about an object, repeated `count` times over as many minutes."""
    now = datetime.now(UTC)
    involved: dict[str, Any] = {"kind": kind, "name": name, "apiVersion": api_version}
    if kind != "Node":
        involved["namespace"] = namespace
    if uid:
        involved["uid"] = uid
    kubernetes.client.CoreV1Api(api).create_namespaced_event(
        namespace,
        {
            "metadata": {"name": f"{name}.{secrets.token_hex(8)}", "namespace": namespace},
            "involvedObject": involved,
            "type": event_type,
            "reason": reason,
            "message": message,
            "count": count,
            "firstTimestamp": stamp(now - timedelta(minutes=count)),
            "lastTimestamp": stamp(now),
            "source": {"component": source},
            "reportingComponent": source,
            "reportingInstance": "",
        },
        _request_timeout=TIMEOUT,
    )


def create_events_v1_event(
    api: kubernetes.client.ApiClient,
    namespace: str,
    kind: str,
    name: str,
    uid: str,
    event_type: str,
    reason: str,
    note: str,
) -> None:
    """An events.k8s.io/v1 Event (the newer API; also visible through core/v1)."""
    now = datetime.now(UTC)
    kubernetes.client.EventsV1Api(api).create_namespaced_event(
        namespace,
        {
            "metadata": {"name": f"{name}.{secrets.token_hex(8)}", "namespace": namespace},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": "kubelet",
            "reportingInstance": "kubelet-test",
            "action": "Pulling",
            "reason": reason,
            "type": event_type,
            "note": note,
            "regarding": {"kind": kind, "name": name, "namespace": namespace, "uid": uid},
        },
        _request_timeout=TIMEOUT,
    )


@dataclass
class Scenario:
    """What a builder created; `target` is ADR-038's namespace/group/Kind/name."""

    namespace: str
    target: str
    node: str | None = None
    pod: str | None = None
    container: str | None = None
    deployment: str | None = None
    replicaset: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def unscheduled_pod(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    replicaset: str,
    containers: list[dict[str, Any]],
    *,
    reason: str,
    message: str,
) -> str:
    """A Pod owned by `replicaset` that the scheduler could not place; its uid.

    As the scheduler leaves it: no nodeName, no container statuses, phase
    Pending and PodScheduled=False with the scheduler's reason and message.
    """
    core = kubernetes.client.CoreV1Api(api)
    pod = _create_owned_pod(api, namespace, name, replicaset, {"containers": containers})
    since = stamp(datetime.now(UTC) - timedelta(minutes=20))
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": since,
    }
    core.patch_namespaced_pod_status(
        name,
        namespace,
        {"status": {"phase": "Pending", "conditions": [condition], "qosClass": "Burstable"}},
        _content_type=MERGE,
        _request_timeout=TIMEOUT,
    )
    return str(pod.metadata.uid)
