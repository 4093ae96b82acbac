"""Raising an autoscaler's maxReplicas is a scale-out: it is not for a new revision.
Utilization is a share of the request, so a release that cuts the CPU request makes
the same work read far above target; while the autoscaler's target is rolling out, or
completed a rollout within the hour before the incident fired, the saturation came
with the revision and more replicas do not answer it. A rollout days before does not
stand in the way."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from hapi_grpc.domain.incident import ErrorDetails, Incident, SignalInfo
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.selection_gate import SelectionGate, Veto
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
)

FIRED = datetime(2026, 11, 26, 14, 0, tzinfo=UTC)
PATCH = schema("PatchHPA", "TARGET_NAMESPACE", "HPA_NAME", "MAX_REPLICAS")
PARAMS = {"TARGET_NAMESPACE": NS, "HPA_NAME": "web", "MAX_REPLICAS": 16}
CUT = template({**container("api"), "resources": {"requests": {"cpu": "200m"}}})


def at_max_on_cpu(reason: str, updated: str) -> Observed:
    """shop/web at its maximum of 8, CPU at 150% of its 200m request, its Deployment's
    rollout at `reason` since `updated`."""
    web = deployment("web", 2, CUT)
    web["status"]["conditions"] = [
        {
            "type": "Progressing",
            "status": "True",
            "reason": reason,
            "lastUpdateTime": updated,
            "lastTransitionTime": "2026-09-01T00:00:00Z",
        }
    ]
    serving = pod("web-b2-1", "web-b2", [container("api")], [running_status("api")], ready=True)
    cpu: dict[str, Any] = {"name": "cpu"}
    target = {"type": "Utilization", "averageUtilization": 70}
    hpa = {
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "minReplicas": 3,
            "maxReplicas": 8,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {**cpu, "target": target},
                }
            ],
        },
        "status": {
            "currentReplicas": 8,
            "currentMetrics": [
                {"type": "Resource", "resource": {**cpu, "current": {"averageUtilization": 150}}}
            ],
        },
    }
    observed = record(web, replica_set("web", "b2", 2, CUT, 8), serving)
    record_object(observed, hpa)
    return observed


def verdict(observed: Observed) -> Veto | None:
    incident = Incident(
        "rr-scene",
        SignalInfo("KubeHpaMaxedOut", None, "", namespace=NS),
        error_details=ErrorDetails(firing_time=FIRED),
    )
    gate = SelectionGate(incident, observed, ())
    return asyncio.run(gate.check(PATCH.workflow_id, PATCH, PARAMS))


def test_a_maximum_pinned_since_a_release_minutes_ago_is_not_raised() -> None:
    veto = verdict(at_max_on_cpu("NewReplicaSetAvailable", "2026-11-26T13:35:00Z"))
    assert veto is not None
    assert "PatchHPA.scale_out_not_for_a_new_revision" in veto.message


def test_no_maximum_raise_while_the_target_rolls_out() -> None:
    veto = verdict(at_max_on_cpu("ReplicaSetUpdated", "2026-11-20T09:00:00Z"))
    assert veto is not None and "scale_out_not_for_a_new_revision" in veto.message


def test_a_maximum_pinned_days_after_the_last_rollout_is_raised() -> None:
    assert verdict(at_max_on_cpu("NewReplicaSetAvailable", "2026-11-20T09:00:00Z")) is None
