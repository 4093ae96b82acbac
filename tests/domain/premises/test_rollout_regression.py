"""IncreaseCPULimits and scaling out are not for a release's regression: when the
workload's rollout is under way, or completed within the hour before the incident
fired, the CPU or load came with the new revision, and more CPU or more replicas
feed it. A rollout days before the incident does not stand in the way."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from hapi_grpc.domain.catalog import WorkflowSchema
from hapi_grpc.domain.incident import ErrorDetails, Incident, SignalInfo
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.selection_gate import SelectionGate, Veto
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
)

FIRED = datetime(2026, 11, 26, 14, 0, tzinfo=UTC)
CPU = template({**container("api"), "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
RAISE = schema(
    "IncreaseCPULimits", "TARGET_RESOURCE_NAMESPACE", "TARGET_RESOURCE_NAME", "CPU_LIMIT"
)
RAISE_PARAMS = {"TARGET_RESOURCE_NAMESPACE": NS, "TARGET_RESOURCE_NAME": "web", "CPU_LIMIT": "2"}
SCALE = schema("ScaleReplicas", "NAMESPACE", "DEPLOYMENT_NAME", "REPLICA_COUNT")
SCALE_PARAMS = {"NAMESPACE": NS, "DEPLOYMENT_NAME": "web", "REPLICA_COUNT": 4}


def progressing(reason: str, updated: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "Progressing",
            "status": "True",
            "reason": reason,
            "lastUpdateTime": updated,
            "lastTransitionTime": "2026-09-01T00:00:00Z",
        }
    ]


def busy_web(reason: str, updated: str) -> Observed:
    """shop/web, throttled and rising in CPU, its rollout at `reason` since `updated`."""
    web = deployment("web", 6, CPU)
    web["status"]["conditions"] = progressing(reason, updated)
    serving = pod("web-a1-1", "web-a1", [container("api")], [running_status("api")], ready=True)
    observed = record(web, replica_set("web", "a1", 6, CPU, 2), serving)
    throttled(observed, "web-a1-1")
    return observed


def throttled(observed: Observed, pod_name: str) -> None:
    """The `api` container of `pod_name` throttled, and rising."""
    record_metric(
        observed,
        'rate(container_cpu_cfs_throttled_periods_total{namespace="shop"}[5m])',
        {
            "series": [
                {
                    "labels": {"namespace": NS, "pod": pod_name, "container": "api"},
                    "last": 0.7,
                    "trend": {"direction": "rising", "slope_per_minute": 0.01},
                }
            ]
        },
    )


def verdict(observed: Observed, workflow: WorkflowSchema, params: dict[str, Any]) -> Veto | None:
    incident = Incident(
        "rr-scene",
        SignalInfo("CPUThrottlingHigh", None, "", namespace=NS),
        error_details=ErrorDetails(firing_time=FIRED),
    )
    gate = SelectionGate(incident, observed, ())
    return asyncio.run(gate.check(workflow.workflow_id, workflow, params))


def test_a_limit_raise_long_after_the_last_rollout_is_allowed() -> None:
    observed = busy_web("NewReplicaSetAvailable", "2026-11-20T09:00:00Z")
    assert verdict(observed, RAISE, RAISE_PARAMS) is None


def test_cpu_use_that_came_with_a_release_minutes_ago_is_not_given_more_cpu() -> None:
    observed = busy_web("NewReplicaSetAvailable", "2026-11-26T13:35:00Z")
    veto = verdict(observed, RAISE, RAISE_PARAMS)
    assert veto is not None
    assert "IncreaseCPULimits.use_did_not_begin_with_a_rollout" in veto.message


def test_no_limit_raise_while_a_rollout_is_under_way() -> None:
    observed = busy_web("ReplicaSetUpdated", "2026-11-20T09:00:00Z")
    veto = verdict(observed, RAISE, RAISE_PARAMS)
    assert veto is not None and "use_did_not_begin_with_a_rollout" in veto.message


def test_a_release_minutes_ago_is_not_scaled_out() -> None:
    assert (
        verdict(busy_web("NewReplicaSetAvailable", "2026-11-20T09:00:00Z"), SCALE, SCALE_PARAMS)
        is None
    )
    observed = busy_web("NewReplicaSetAvailable", "2026-11-26T13:20:00Z")
    veto = verdict(observed, SCALE, SCALE_PARAMS)
    assert veto is not None and "ScaleReplicas.scale_out_not_for_a_new_revision" in veto.message


def busy_statefulset(current: str, update: str, updated_replicas: int = 3) -> Observed:
    """shop/web as a StatefulSet of 3, throttled and rising in CPU, at `current`
    revision while its template is `update` (a StatefulSet tells no completion time)."""
    web = {
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"replicas": 3, "template": CPU},
        "status": {
            "replicas": 3,
            "updatedReplicas": updated_replicas,
            "currentRevision": current,
            "updateRevision": update,
        },
    }
    serving = pod(
        "web-0",
        "web",
        [container("api")],
        [running_status("api")],
        owner_kind="StatefulSet",
        ready=True,
    )
    observed = record(web, serving)
    throttled(observed, "web-0")
    return observed


def test_a_statefulset_rolling_out_its_template_is_not_given_more_cpu() -> None:
    assert verdict(busy_statefulset("web-7c9", "web-7c9"), RAISE, RAISE_PARAMS) is None
    veto = verdict(busy_statefulset("web-7c9", "web-5f4", updated_replicas=1), RAISE, RAISE_PARAMS)
    assert veto is not None
    assert "IncreaseCPULimits.use_did_not_begin_with_a_rollout" in veto.message
