"""RepairPullSecret re-attaches a pull secret to a ServiceAccount: only the account the
failing Pods run as (`spec.serviceAccountName`, else the namespace's `default`) changes
their pulls. An omitted account parameter runs as its schema default, and is judged so."""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.catalog import ParameterSpec, WorkflowSchema
from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.kubernetes.log_facts import record_event
from tests.domain.premises.scenes import NS, container, pod, record, verdict

REPAIR = WorkflowSchema(
    workflow_id="repair-pull-secret-v1",
    action_type="RepairPullSecret",
    parameters=(
        ParameterSpec(name="NAMESPACE"),
        ParameterSpec(name="SERVICE_ACCOUNT_NAME", default="default"),
        ParameterSpec(name="PULL_SECRET_NAME"),
    ),
)
UNAUTHORIZED = (
    'Failed to pull image "registry.corp.example/shop/cart:5.2": failed to authorize: failed to'
    " fetch oauth token: unexpected status: 401 Unauthorized"
)


def refused_pull(account: str | None) -> Observed:
    failing = pod(
        "cart-7d-x1",
        "cart-7d",
        [container("cart", image="registry.corp.example/shop/cart:5.2")],
        [{"name": "cart", "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
    )
    spec: dict[str, Any] = failing["spec"]
    spec["imagePullSecrets"] = [{"name": "corp-registry"}]
    if account:
        spec["serviceAccountName"] = account
    observed = record(failing)
    record_event(
        observed,
        "Pod",
        NS,
        "cart-7d-x1",
        {"type": "Warning", "reason": "Failed", "message": UNAUTHORIZED, "count": 6},
    )
    return observed


def test_the_account_the_pods_run_as_is_repaired() -> None:
    params = {"NAMESPACE": NS, "PULL_SECRET_NAME": "corp-registry", "SERVICE_ACCOUNT_NAME": "cart"}
    assert verdict(refused_pull("cart"), REPAIR, params) is None


def test_another_account_is_not_repaired_in_their_place() -> None:
    params = {"NAMESPACE": NS, "PULL_SECRET_NAME": "corp-registry", "SERVICE_ACCOUNT_NAME": "batch"}
    veto = verdict(refused_pull("cart"), REPAIR, params)
    assert veto is not None
    assert "RepairPullSecret.service_account_of_the_failing_pods" in veto.message


def test_an_omitted_account_is_judged_as_the_schema_default() -> None:
    params = {"NAMESPACE": NS, "PULL_SECRET_NAME": "corp-registry"}
    veto = verdict(refused_pull("cart"), REPAIR, params)
    assert veto is not None
    assert "RepairPullSecret.service_account_of_the_failing_pods" in veto.message
    # A Pod that names no account runs as `default`: the default then fits.
    assert verdict(refused_pull(None), REPAIR, params) is None
