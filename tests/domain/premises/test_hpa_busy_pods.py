"""PatchHPA needs the work done to grow with replicas: the autoscaler reports a resource
of its Pods (CPU or memory) at or above its target, so the Pods are busy and more of
them add capacity. An autoscaler that only follows a queue or an external metric shows
nothing of the sort (its Pods may idle on work that cannot be done)."""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.kubernetes.facts import record_object
from tests.domain.premises.scenes import (
    NS,
    container,
    deployment,
    pod,
    record,
    replica_set,
    running_status,
    schema,
    template,
    verdict,
)

PATCH = schema("PatchHPA", "TARGET_NAMESPACE", "HPA_NAME", "MAX_REPLICAS")
PARAMS = {"TARGET_NAMESPACE": NS, "HPA_NAME": "worker", "MAX_REPLICAS": 24}
QUEUE = {"metric": {"name": "sqs_messages_visible", "selector": {"matchLabels": {"q": "jobs"}}}}


def autoscaler(metrics: list[dict[str, Any]], current: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "worker", "namespace": NS},
        "spec": {
            "minReplicas": 3,
            "maxReplicas": 12,
            "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
            "metrics": metrics,
        },
        "status": {"currentReplicas": 12, "currentMetrics": current},
    }


def at_max(hpa: dict[str, Any]) -> Observed:
    tmpl = template(container("worker"))
    busy = pod("worker-a1-1", "worker-a1", [container("worker")], [running_status("worker")])
    observed = record(deployment("worker", 3, tmpl), replica_set("worker", "a1", 3, tmpl, 12))
    record_object(observed, busy)
    record_object(observed, hpa)
    return observed


def test_an_autoscaler_on_a_queue_alone_is_not_raised() -> None:
    hpa = autoscaler(
        [{"type": "External", "external": {**QUEUE, "target": {"averageValue": "30"}}}],
        [{"type": "External", "external": {**QUEUE, "current": {"averageValue": "940"}}}],
    )
    veto = verdict(at_max(hpa), PATCH, PARAMS)
    assert veto is not None and "PatchHPA.pods_saturated_on_a_resource" in veto.message


def test_pods_idle_below_their_cpu_target_are_not_given_more_replicas() -> None:
    cpu = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 75}}
    hpa = autoscaler(
        [{"type": "Resource", "resource": cpu}],
        [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}],
    )
    veto = verdict(at_max(hpa), PATCH, PARAMS)
    assert veto is not None and "pods_saturated_on_a_resource" in veto.message


def test_pods_over_their_memory_average_are_given_more_replicas() -> None:
    memory = {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}
    hpa = autoscaler(
        [{"type": "Resource", "resource": memory}],
        [
            {
                "type": "Resource",
                "resource": {"name": "memory", "current": {"averageValue": "1288490188"}},
            }
        ],
    )
    assert verdict(at_max(hpa), PATCH, PARAMS) is None
