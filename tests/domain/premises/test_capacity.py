"""PatchHPA and ScaleReplicas on catalogs without declarations: the load must be shown
legitimate by Pods read, not assumed from Pods never resolved to the workload."""

from __future__ import annotations

from typing import Any

from hapi_grpc.toolsets.kubernetes.facts import record_object
from hapi_grpc.toolsets.prometheus.facts import record_metric
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

CPU_AT_70 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
}

WEB = template(container("web"))
HPA = {
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": NS},
    "spec": {
        "minReplicas": 2,
        "maxReplicas": 10,
        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "metrics": [CPU_AT_70],
    },
    "status": {
        "currentReplicas": 10,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 88}}}
        ],
    },
}
PATCH = schema("PatchHPA", "NAMESPACE", "HPA_NAME", "MAX_REPLICAS")
PARAMS = {"NAMESPACE": NS, "HPA_NAME": "web", "MAX_REPLICAS": 20}


def healthy_pod() -> dict[str, Any]:
    return pod("web-a1-1", "web-a1", [container("web")], [running_status("web")], ready=True)


def test_an_autoscaler_at_its_maximum_with_healthy_pods_is_raised() -> None:
    observed = record(deployment("web", 1, WEB), replica_set("web", "a1", 1, WEB, 10), HPA)
    record_object(observed, healthy_pod())
    assert verdict(observed, PATCH, PARAMS) is None
    veto = verdict(observed, PATCH, {**PARAMS, "MAX_REPLICAS": 8})
    assert veto is not None and "PatchHPA.maximum_raised" in veto.message


def test_pods_not_resolved_to_the_target_do_not_show_the_load_legitimate() -> None:
    """Without its ReplicaSet read, a Pod is not known to belong to the Deployment."""
    observed = record(deployment("web", 1, WEB), HPA, healthy_pod())
    veto = verdict(observed, PATCH, PARAMS)
    assert veto is not None and "load_is_legitimate" in veto.message


def test_scaling_out_needs_load_read_and_a_quota_that_admits_the_pods() -> None:
    scale = schema("ScaleReplicas", "NAMESPACE", "DEPLOYMENT_NAME", "REPLICA_COUNT")
    params = {"NAMESPACE": NS, "DEPLOYMENT_NAME": "web", "REPLICA_COUNT": 4}
    observed = record(deployment("web", 1, WEB), replica_set("web", "a1", 1, WEB, 2), healthy_pod())
    veto = verdict(observed, scale, params)
    assert veto is not None and "ScaleReplicas.direction_has_its_reason" in veto.message
    latency = 'rate(http_request_duration_seconds_bucket{namespace="shop"}[5m])'
    record_metric(
        observed,
        f"histogram_quantile(0.99, {latency})",
        {"series": [{"labels": {"namespace": NS}, "trend": {"direction": "rising"}}]},
    )
    assert verdict(observed, scale, params) is None
    record_object(
        observed,
        {
            "kind": "ResourceQuota",
            "metadata": {"name": "shop", "namespace": NS},
            "status": {"hard": {"pods": "3"}, "used": {"pods": "2"}},
        },
    )
    veto = verdict(observed, scale, params)  # 2 used + 2 more > 3
    assert veto is not None and "quota_admits_the_pods" in veto.message
