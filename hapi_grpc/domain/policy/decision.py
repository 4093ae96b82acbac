"""What a policy rule sees: the decision as four CEL variables.

Design notes: docs/internals.md (`domain/policy/decision.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.catalog import SearchHit
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.result import AnalysisResult, SelectedWorkflow, TargetResource

__all__ = ["VARIABLES", "Decision"]

VARIABLES = ("incident", "workflow", "params", "target")


@dataclass(frozen=True, slots=True)
class Decision:
    """One selected workflow about to be returned, as the rules see it."""

    incident: dict[str, Any]
    workflow: dict[str, Any]
    params: dict[str, Any]
    target: dict[str, str]

    @classmethod
    def of(
        cls, incident: Incident, result: AnalysisResult, hit: SearchHit | None = None
    ) -> Decision:
        """The decision of `result` (which must select a workflow); `hit` is the catalog's
        entry for the selection, when the investigation saw one."""
        selected = result.selected_workflow
        assert selected is not None
        return cls(
            incident=_incident(incident),
            workflow=_workflow(selected, hit),
            params=dict(selected.parameters),
            target=_target(incident, result.target_resource),
        )

    def variables(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in VARIABLES}

    @property
    def target_text(self) -> str:
        """namespace/kind/name, the default rate-limit key."""
        t = self.target
        return f"{t['namespace']}/{t['kind']}/{t['name']}"


def _incident(incident: Incident) -> dict[str, Any]:
    signal, business = incident.signal, incident.business
    return {
        "remediation_id": incident.remediation_id,
        "namespace": signal.namespace,
        "signal_type": signal.signal_type,
        "severity": signal.severity.value if signal.severity else "",
        "alert_name": signal.alert_name,
        "component": signal.component,
        "resource_kind": signal.resource_kind,
        "resource_name": signal.resource_name,
        "environment": business.environment,
        "priority": business.priority,
        "business_category": business.business_category,
        "risk_tolerance": business.risk_tolerance.value if business.risk_tolerance else "",
        "cluster": incident.cluster.cluster_name,
        "labels": dict(incident.cluster.signal_labels),
        "custom_labels": {k: list(v) for k, v in incident.enrichment.custom_labels.items()},
        "detected_labels": dict(incident.enrichment.detected_labels),
        "is_duplicate": incident.deduplication.is_duplicate,
        "occurrence_count": incident.deduplication.occurrence_count,
        "is_storm": incident.storm.is_storm,
    }


def _workflow(selected: SelectedWorkflow, hit: SearchHit | None) -> dict[str, Any]:
    risk = hit.estimated_risk if hit is not None and hit.estimated_risk else None
    return {
        "id": selected.workflow_id,
        "version": selected.version,
        "risk_level": (risk or selected.estimated_risk).value,
        "confidence": selected.confidence,
        # The catalog's field, never a word of prose; a workflow the search did not
        # return counts as changing state.
        "read_only": hit.read_only if hit is not None else False,
    }


def _target(incident: Incident, answered: TargetResource | None) -> dict[str, str]:
    if answered is not None and answered.name:
        return {
            "namespace": answered.namespace,
            "kind": answered.kind,
            "name": answered.name,
            "api_group": answered.api_group,
        }
    signal = incident.signal
    return {
        "namespace": signal.namespace,
        "kind": signal.resource_kind,
        "name": signal.resource_name,
        "api_group": "",
    }
