"""RollbackDeployment needs the failure to come with the latest rollout: a Deployment
whose rollout completed (Progressing NewReplicaSetAvailable) and that stayed available
for a sustained time before it lost availability was healthy on its current template,
so the cause came later and a rollback does not remove it."""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.kubernetes.log_facts import record_event, record_log
from tests.domain.premises.scenes import (
    NS,
    container,
    crash_status,
    deployment,
    pod,
    record,
    replica_set,
    schema,
    template,
    verdict,
)

OLD = template(container("orders", image="orders:7.1"))
NEW = template(container("orders", image="orders:7.2"))
ROLLBACK = schema("RollbackDeployment", "NAMESPACE", "DEPLOYMENT_NAME")
PARAMS = {"NAMESPACE": NS, "DEPLOYMENT_NAME": "orders"}


def conditions(completed: str, unavailable: str) -> list[dict[str, Any]]:
    """A Deployment's conditions: its rollout completed at `completed`, and it lost
    availability at `unavailable`."""
    return [
        {
            "type": "Available",
            "status": "False",
            "reason": "MinimumReplicasUnavailable",
            "lastUpdateTime": unavailable,
            "lastTransitionTime": unavailable,
        },
        {
            "type": "Progressing",
            "status": "True",
            "reason": "NewReplicaSetAvailable",
            "lastUpdateTime": completed,
            "lastTransitionTime": "2026-10-02T08:00:00Z",
        },
    ]


def back_off(
    observed: Observed, pod_name: str, first: str, last: str = "2026-11-26T14:00:00Z"
) -> None:
    """The kubelet's folded BackOff warning about a Pod, first seen at `first`."""
    event = {
        "type": "Warning",
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
    }
    record_event(
        observed, "Pod", NS, pod_name, {**event, "count": 9, "first_seen": first, "last_seen": last}
    )


def failing_release(completed: str, unavailable: str, failing_since: str = "") -> Observed:
    current = deployment("orders", 12, NEW)
    current["status"]["conditions"] = conditions(completed, unavailable)
    failing = pod("orders-c3-p1", "orders-c3", [container("orders")], [crash_status("orders")])
    observed = record(
        current,
        replica_set("orders", "b2", 11, OLD),
        replica_set("orders", "c3", 12, NEW),
        failing,
    )
    lines = ["orders 7.2 listening", "FATAL: remaining connection slots are reserved"]
    record_log(observed, NS, "orders-c3-p1", "orders", previous=True, lines=lines)
    back_off(observed, "orders-c3-p1", failing_since or unavailable)
    return observed


def test_a_release_that_failed_minutes_after_completing_is_rolled_back() -> None:
    observed = failing_release("2026-11-26T10:00:00Z", "2026-11-26T10:06:00Z")
    assert verdict(observed, ROLLBACK, PARAMS) is None


def test_a_release_that_served_for_hours_before_failing_is_not_rolled_back() -> None:
    observed = failing_release("2026-11-26T10:00:00Z", "2026-11-26T13:40:00Z")
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None
    assert "RollbackDeployment.current_template_never_ran_healthy" in veto.message


def test_the_rollouts_completion_is_its_last_update_not_its_last_transition() -> None:
    """Progressing stays True through a rollout: its transition time is older than the
    rollout, and only lastUpdateTime says when the new ReplicaSet became available."""
    observed = failing_release("2026-11-26T13:30:00Z", "2026-11-26T13:40:00Z")
    assert verdict(observed, ROLLBACK, PARAMS) is None


def test_a_failure_first_seen_long_after_the_rollout_completed_is_not_rolled_back() -> None:
    """The Available condition can say little (its transition is when availability last
    changed, not when this failure began): the Pods' own failure events, first seen
    hours after the rollout completed, show a template that served before failing."""
    observed = failing_release(
        "2026-11-26T10:00:00Z", "2026-11-26T10:06:00Z", failing_since="2026-11-26T13:35:00Z"
    )
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None
    assert "RollbackDeployment.failure_first_seen_near_completion" in veto.message


def test_a_completed_rollout_needs_the_time_its_failure_began() -> None:
    """Without a failure event read, nothing says the failure came with the rollout."""
    current = deployment("orders", 12, NEW)
    current["status"]["conditions"] = conditions("2026-11-26T10:00:00Z", "2026-11-26T10:06:00Z")
    failing = pod("orders-c3-p1", "orders-c3", [container("orders")], [crash_status("orders")])
    observed = record(
        current, replica_set("orders", "b2", 11, OLD), replica_set("orders", "c3", 12, NEW), failing
    )
    record_log(observed, NS, "orders-c3-p1", "orders", previous=True, lines=["FATAL: boom"])
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None
    assert "RollbackDeployment.failure_first_seen_near_completion" in veto.message
