"""Decisions and policies for the policy tests."""

from __future__ import annotations

from typing import Any

import yaml

from hapi_grpc.domain.incident import BusinessContext, ClusterContext, Incident, SignalInfo
from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.domain.policy.rules import Policy, parse_policy
from hapi_grpc.domain.result import AnalysisResult, SelectedWorkflow, TargetResource


def policy(text: str) -> Policy:
    return parse_policy(yaml.safe_load(text))


def incident(
    *,
    namespace: str = "payments",
    environment: str = "production",
    labels: dict[str, str] | None = None,
    remediation_id: str = "rr-1",
) -> Incident:
    return Incident(
        remediation_id,
        SignalInfo(
            "OOMKilled",
            severity=Severity.CRITICAL,
            namespace=namespace,
            resource_kind="Deployment",
            resource_name="payment-api",
        ),
        cluster=ClusterContext(signal_labels=labels or {}),
        business=BusinessContext(environment=environment),
    )


def selected(
    workflow_id: str = "oomkill-increase-memory-v1",
    *,
    risk: RiskLevel = RiskLevel.LOW,
    params: dict[str, Any] | None = None,
    target: TargetResource | None = None,
    review: bool = False,
) -> AnalysisResult:
    result = AnalysisResult(
        "rr-1",
        selected_workflow=SelectedWorkflow(
            workflow_id,
            "1.0.0",
            0.9,
            "because",
            risk,
            params if params is not None else {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "a"},
        ),
        target_resource=target,
    )
    if review:
        result.needs_human_review = True
    return result


class StaticSource:
    """A policy source that never changes."""

    def __init__(self, value: Policy) -> None:
        self.value = value

    async def current(self) -> Policy:
        return self.value
