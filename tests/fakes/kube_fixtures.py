"""Builders for the incidents in examples/, written into a real test apiserver.

Each builder creates the objects of one incident through the API with the
official client (owner references, statuses through the status subresource,
events, canned logs on the test kubelet) and returns a `Scenario` naming them.
Names follow the example files; the namespace (and a node name, cluster-scoped)
come from the caller so every test gets fresh ones.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import kubernetes

from tests.fakes.kube_fixtures_infra import certificate_not_ready, nodenotready
from tests.fakes.kube_objects import (
    Scenario,
    container_status,
    create_event,
    create_events_v1_event,
    ensure_node,
    owned_pod,
    stamp,
    unscheduled_pod,
    workload,
)
from tests.fakes.kubelet import FakeKubelet

__all__ = [
    "Scenario",
    "certificate_not_ready",
    "crashloopbackoff",
    "imagepullbackoff",
    "nodenotready",
    "oomkilled",
    "pending_unschedulable",
]


def oomkilled(
    api: kubernetes.client.ApiClient, namespace: str, node: str, kubelet: FakeKubelet
) -> Scenario:
    """payments/payment-api: last termination OOMKilled (137) at a 512Mi limit."""
    now = datetime.now(UTC)
    ensure_node(api, node, kubelet)
    container = {
        "name": "payment-api",
        "image": "registry.internal/payments/payment-api:3.4.1",
        "resources": {
            "requests": {"cpu": "250m", "memory": "256Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        },
    }
    deployment, replicaset = workload(
        api,
        namespace,
        "payment-api",
        "6d9f7c5b8",
        [container],
        replicas=3,
        deployment_status={
            "replicas": 3,
            "updatedReplicas": 3,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "unavailableReplicas": 1,
        },
    )
    pod = "payment-api-6d9f7c5b8-x2k4q"
    pod_uid = owned_pod(
        api,
        namespace,
        pod,
        replicaset,
        [container],
        node,
        phase="Running",
        ready=True,
        statuses=[
            container_status(
                container,
                ready=True,
                restarts=5,
                state={"running": {"startedAt": stamp(now - timedelta(minutes=2))}},
                last={
                    "terminated": {
                        "reason": "OOMKilled",
                        "exitCode": 137,
                        "startedAt": stamp(now - timedelta(minutes=14)),
                        "finishedAt": stamp(now - timedelta(minutes=2)),
                    }
                },
            )
        ],
    )
    kubelet.set_log(
        namespace,
        pod,
        "payment-api",
        [
            "starting payment-api 3.4.1",
            "settlement batch 8812: loading 412000 records",
            "heap in use 498Mi of 512Mi",
        ],
        previous=True,
    )
    kubelet.set_log(namespace, pod, "payment-api", ["starting payment-api 3.4.1", "ready"])
    create_event(
        api,
        namespace,
        "Pod",
        pod,
        "Warning",
        "BackOff",
        f"Back-off restarting failed container payment-api in pod {pod}",
        count=5,
        uid=pod_uid,
    )
    return Scenario(
        namespace,
        f"{namespace}/apps/Deployment/{deployment}",
        node=node,
        pod=pod,
        container="payment-api",
        deployment=deployment,
        replicaset=replicaset,
    )


def crashloopbackoff(
    api: kubernetes.client.ApiClient, namespace: str, node: str, kubelet: FakeKubelet
) -> Scenario:
    """checkout/cart-service: waiting CrashLoopBackOff, last exit 1, a previous log.

    The container also reads a Secret through an env var and has a literal
    secret-looking env value, and its previous log carries a token: material
    for the no-secrets-out tests.
    """
    now = datetime.now(UTC)
    ensure_node(api, node, kubelet)
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": "cart-service-redis"},
            "stringData": {"password": "redis-password-do-not-leak"},
        },
        _request_timeout=30,
    )
    container = {
        "name": "cart-service",
        "image": "registry.internal/checkout/cart-service:2.3.1",
        "env": [
            {"name": "REDIS_HOST", "value": "redis.checkout.svc"},
            {
                "name": "REDIS_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": "cart-service-redis", "key": "password"}},
            },
            {"name": "API_TOKEN", "value": "literal-token-do-not-leak"},
        ],
        "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m"}},
    }
    deployment, replicaset = workload(
        api,
        namespace,
        "cart-service",
        "5c7d9",
        [container],
        replicas=2,
        deployment_status={"replicas": 2, "updatedReplicas": 2, "unavailableReplicas": 2},
        available=False,
    )
    pod = "cart-service-5c7d9-abcde"
    pod_uid = owned_pod(
        api,
        namespace,
        pod,
        replicaset,
        [container],
        node,
        phase="Running",
        ready=False,
        statuses=[
            container_status(
                container,
                ready=False,
                restarts=12,
                state={
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off 5m0s restarting failed container=cart-service "
                        f"pod={pod}_{namespace}",
                    }
                },
                last={
                    "terminated": {
                        "reason": "Error",
                        "exitCode": 1,
                        "startedAt": stamp(now - timedelta(seconds=64)),
                        "finishedAt": stamp(now - timedelta(seconds=61)),
                    }
                },
            )
        ],
    )
    kubelet.set_log(
        namespace,
        pod,
        "cart-service",
        [
            "starting cart-service 2.3.1",
            "loading configuration from environment",
            "auth: using bearer token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYXJ0In0.c2lnbmF0dXJl",
            "FATAL config key REDIS_URL missing",
            "exit status 1",
        ],
        previous=True,
    )
    kubelet.set_log(
        namespace,
        pod,
        "cart-service",
        ["starting cart-service 2.3.1", "loading configuration from environment"],
    )
    create_event(
        api,
        namespace,
        "Pod",
        pod,
        "Warning",
        "BackOff",
        f"Back-off restarting failed container cart-service in pod {pod}_{namespace}({pod_uid})",
        count=47,
        uid=pod_uid,
    )
    create_event(
        api,
        namespace,
        "Pod",
        pod,
        "Normal",
        "Pulled",
        f'Container image "{container["image"]}" already present on machine',
        count=12,
        uid=pod_uid,
    )
    return Scenario(
        namespace,
        f"{namespace}/apps/Deployment/{deployment}",
        node=node,
        pod=pod,
        container="cart-service",
        deployment=deployment,
        replicaset=replicaset,
        extra={"secret": "cart-service-redis"},
    )


def imagepullbackoff(
    api: kubernetes.client.ApiClient, namespace: str, node: str, kubelet: FakeKubelet
) -> Scenario:
    """search/indexer revision 7 cannot pull its image; revision 6's ReplicaSet is healthy."""
    ensure_node(api, node, kubelet)
    image = "registry.internal/search/indexer:2.14.0"
    container = {"name": "indexer", "image": image}
    old = {"name": "indexer", "image": "registry.internal/search/indexer:2.13.2"}
    deployment, replicaset = workload(
        api,
        namespace,
        "indexer",
        "7c6b5d9f8",
        [container],
        replicas=3,
        revision=7,
        deployment_status={
            "replicas": 4,
            "updatedReplicas": 1,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "unavailableReplicas": 1,
        },
        replicaset_status={"replicas": 1, "readyReplicas": 0, "availableReplicas": 0},
        pull_secret="registry-internal",
    )
    _, old_replicaset = workload(
        api,
        namespace,
        "indexer",
        "84d5c6b7f9",
        [old],
        replicas=3,
        revision=6,
        replicaset_status={"replicas": 3, "readyReplicas": 3, "availableReplicas": 3},
        existing_deployment=True,
    )
    pod = "indexer-7c6b5d9f8-k2m4p"
    pod_uid = owned_pod(
        api,
        namespace,
        pod,
        replicaset,
        [container],
        node,
        phase="Pending",
        ready=False,
        statuses=[
            container_status(
                container,
                ready=False,
                restarts=0,
                state={
                    "waiting": {
                        "reason": "ImagePullBackOff",
                        "message": f'Back-off pulling image "{image}"',
                    }
                },
            )
        ],
        pull_secret="registry-internal",
    )
    events = [
        ("Normal", "Pulling", f'Pulling image "{image}"', 4),
        ("Warning", "Failed", "Error: ErrImagePull", 4),
        ("Normal", "BackOff", f'Back-off pulling image "{image}"', 21),
        ("Warning", "Failed", "Error: ImagePullBackOff", 21),
    ]
    for kind, reason, message, count in events:
        create_event(api, namespace, "Pod", pod, kind, reason, message, count=count, uid=pod_uid)
    create_events_v1_event(
        api,
        namespace,
        "Pod",
        pod,
        pod_uid,
        "Warning",
        "Failed",
        f'Failed to pull image "{image}": unauthorized: authentication required',
    )
    return Scenario(
        namespace,
        f"{namespace}/apps/Deployment/{deployment}",
        node=node,
        pod=pod,
        container="indexer",
        deployment=deployment,
        replicaset=replicaset,
        extra={"old_replicaset": old_replicaset, "image": image},
    )


UNSCHEDULABLE = (
    "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available:"
    " 3 No preemption victims found for incoming pod."
)


def pending_unschedulable(
    api: kubernetes.client.ApiClient, namespace: str, *, events: bool = True
) -> Scenario:
    """reports/report-builder: a new replica requesting 6Gi stays Pending; the
    scheduler's FailedScheduling event says no node has the memory.

    `events=False` leaves it as it is once the event has expired: the verdict
    is then only in the Pod's PodScheduled=False condition.
    """
    container = {
        "name": "report-builder",
        "image": "registry.internal/reports/report-builder:1.8.0",
        "resources": {
            "requests": {"cpu": "500m", "memory": "6Gi"},
            "limits": {"memory": "6Gi"},
        },
    }
    deployment, replicaset = workload(
        api,
        namespace,
        "report-builder",
        "7f8c9d6b5",
        [container],
        replicas=4,
        deployment_status={
            "replicas": 4,
            "updatedReplicas": 4,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "unavailableReplicas": 1,
        },
    )
    pod = "report-builder-7f8c9d6b5-q8w2n"
    pod_uid = unscheduled_pod(
        api,
        namespace,
        pod,
        replicaset,
        [container],
        reason="Unschedulable",
        message=UNSCHEDULABLE,
    )
    if events:
        create_event(
            api,
            namespace,
            "Pod",
            pod,
            "Warning",
            "FailedScheduling",
            UNSCHEDULABLE,
            count=18,
            uid=pod_uid,
            source="default-scheduler",
        )
    return Scenario(
        namespace,
        f"{namespace}/apps/Deployment/{deployment}",
        pod=pod,
        container="report-builder",
        deployment=deployment,
        replicaset=replicaset,
        extra={"message": UNSCHEDULABLE},
    )
