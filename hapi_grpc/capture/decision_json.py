"""A result as the AnalysisResult it was answered as (proto JSON mapping), as a case keeps it.

Every captured case carries its decision; converting the result to its message
and that through `json_format` costs the capture writer several times what this
direct mapping does. It gives what `MessageToDict(result_to_proto(result))`
gives (a test holds the two equal, field by field of the message), without the
fields a case does not keep: the tool calls and validation attempts (what the
case's own files replay) and the run's measurements.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from hapi_grpc.capture.request_json import set_fields
from hapi_grpc.domain import result as r
from hapi_grpc.transport.converters import dict_to_struct

__all__ = ["NOT_KEPT", "decision_json"]

# Fields of AnalysisResult a case leaves out (proto JSON names).
NOT_KEPT = (
    "toolCalls",
    "validationAttempts",
    "llmTurns",
    "tokenUsage",
    "durationSeconds",
    "reused",
    "completedAt",
)


def _selected(s: r.SelectedWorkflow) -> dict[str, Any]:
    risk = s.estimated_risk
    return {
        **set_fields(
            workflowId=s.workflow_id,
            version=s.version,
            confidence=float(s.confidence),
            rationale=s.rationale,
            estimatedRisk=f"RISK_LEVEL_{risk.name}" if risk is not None else "",
        ),
        # A Struct: its numbers are doubles, as the answer carried them.
        "parameters": json_format.MessageToDict(dict_to_struct(s.parameters)),
        **set_fields(actionType=s.action_type),
    }


def decision_json(result: r.AnalysisResult) -> dict[str, Any]:
    """`result` as proto JSON, without the fields in `NOT_KEPT`."""
    severity, reason = result.rca_severity, result.human_review_reason
    body = set_fields(
        remediationId=result.remediation_id,
        incidentId=result.incident_id,
        analysisSummary=result.analysis_summary,
        rootCauseAssessment=result.root_cause_assessment,
        rcaSeverity=f"SEVERITY_{severity.name}" if severity is not None else "",
    )
    if result.target_resource is not None:
        t = result.target_resource
        body["targetResource"] = set_fields(
            namespace=t.namespace, kind=t.kind, name=t.name, apiGroup=t.api_group
        )
    if result.selected_workflow is not None:
        body["selectedWorkflow"] = _selected(result.selected_workflow)
    if result.alternative_workflows:
        body["alternativeWorkflows"] = [
            set_fields(
                workflowId=a.workflow_id,
                confidence=float(a.confidence),
                rationale=a.rationale,
                actionType=a.action_type,
            )
            for a in result.alternative_workflows
        ]
    if result.warnings:
        body["warnings"] = list(result.warnings)
    if result.context_used is not None:
        c = result.context_used
        body["contextUsed"] = set_fields(
            clusterState=c.cluster_state,
            resourceAvailability=c.resource_availability,
            blastRadius=c.blast_radius,
        )
    return body | set_fields(
        needsHumanReview=result.needs_human_review,
        humanReviewReason=f"HUMAN_REVIEW_REASON_{reason.name}" if reason is not None else "",
        model=result.model,
        languageModelUsed=result.language_model_used,
    )
