"""RollbackDeployment (and HelmRollback, GitRevertCommit) need the failure to be the
latest revision's own: the Pods earlier revisions still run are read, and none of
them, present or gone, was seen failing. A cause both revisions share (an expired
credential, a dependency down) began before or apart from the rollout, and rolling
back keeps it."""

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
    running_status,
    schema,
    template,
    verdict,
)

OLD = template(container("billing", image="billing:3.0"))
NEW = template(container("billing", image="billing:3.1"))
ROLLBACK = schema("RollbackDeployment", "NAMESPACE", "DEPLOYMENT_NAME")
PARAMS = {"NAMESPACE": NS, "DEPLOYMENT_NAME": "billing"}


def stuck_rollout(*pods: dict[str, Any], old_replicas: int = 2) -> Observed:
    """Revision 5's rollout never completed; revision 4 keeps `old_replicas` Pods."""
    current = deployment("billing", 5, NEW)
    current["status"]["conditions"] = [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
    ]
    previous = replica_set("billing", "a4", 4, OLD)
    previous["spec"]["replicas"] = old_replicas
    failing = pod("billing-b5-n1", "billing-b5", [container("billing")], [crash_status("billing")])
    observed = record(current, previous, replica_set("billing", "b5", 5, NEW), failing, *pods)
    record_log(observed, NS, "billing-b5-n1", "billing", previous=True, lines=["panic: nil map"])
    return observed


def back_off(observed: Observed, pod_name: str, first: str) -> None:
    event = {
        "type": "Warning",
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
    }
    record_event(
        observed,
        "Pod",
        NS,
        pod_name,
        {**event, "count": 12, "first_seen": first, "last_seen": "2026-11-26T11:00:00Z"},
    )


def old_pod(name: str, status: dict[str, Any]) -> dict[str, Any]:
    return pod(name, "billing-a4", [container("billing", image="billing:3.0")], [status])


def test_a_regression_whose_earlier_revision_runs_healthy_is_rolled_back() -> None:
    observed = stuck_rollout(old_pod("billing-a4-k1", running_status("billing")))
    assert verdict(observed, ROLLBACK, PARAMS) is None


def test_the_pods_an_earlier_revision_still_runs_must_be_read() -> None:
    veto = verdict(stuck_rollout(), ROLLBACK, PARAMS)
    assert veto is not None
    assert "RollbackDeployment.earlier_revisions_not_failing" in veto.message


def test_an_earlier_revision_crash_looping_too_is_not_rolled_back_to() -> None:
    observed = stuck_rollout(old_pod("billing-a4-k1", crash_status("billing")))
    back_off(observed, "billing-a4-k1", "2026-11-26T10:01:00Z")
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None
    assert "earlier_revisions_not_failing" in veto.message or (
        "failure_began_with_latest_rollout" in veto.message
    )


def test_a_failure_event_of_an_earlier_revisions_pod_gone_since_is_not_rolled_back() -> None:
    """The old Pods were replaced, but their BackOff warnings, kept by the API server,
    name them: `<ReplicaSet>-<suffix>` is how a ReplicaSet names its Pods."""
    observed = stuck_rollout(old_replicas=0)
    back_off(observed, "billing-a4-zz9", "2026-11-26T09:50:00Z")
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None
    assert "RollbackDeployment.earlier_revisions_not_failing" in veto.message
