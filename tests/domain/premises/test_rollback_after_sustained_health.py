"""RollbackDeployment needs the failure to come with the latest rollout: a Deployment
whose rollout completed (Progressing NewReplicaSetAvailable) and that stayed available
for a sustained time before it lost availability was healthy on its current template,
so the cause came later and a rollback does not remove it."""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.kubernetes.log_facts import record_log
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


def failing_release(completed: str, unavailable: str) -> Observed:
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
