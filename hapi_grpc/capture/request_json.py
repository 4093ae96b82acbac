"""An incident back as the AnalyzeIncidentRequest it came in (proto JSON mapping).

The inverse of `transport.converters.incident_from_proto` (and the recovery
context's converter): a captured case's `request.json` is what a replay sends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.recovery import PreviousExecution, RecoveryContext

__all__ = ["request_json"]


def _time(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _level(value: Any, prefix: str) -> str | None:
    return f"{prefix}_{value.name}" if value is not None else None


def _pruned(value: Any) -> Any:
    """Without unset fields (None, "", 0, False, empty): proto3 JSON leaves them out."""
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if isinstance(item, dict | list | tuple):
                item = _pruned(item)
            if item:  # every unset value, and only those, is falsy
                kept[key] = item
        return kept
    if isinstance(value, list | tuple):
        return [_pruned(v) for v in value]
    return value


def _execution(item: PreviousExecution) -> dict[str, Any]:
    failure, workflow, rca = item.failure, item.workflow, item.original_analysis
    return {
        "workflow": {
            "workflowId": workflow.workflow_id,
            "version": workflow.version,
            "parameters": dict(workflow.parameters),
        },
        "rationale": item.rationale,
        "originalAnalysis": {
            "summary": rca.summary,
            "signalType": rca.signal_type,
            "severity": _level(rca.severity, "SEVERITY"),
            "contributingFactors": list(rca.contributing_factors),
        },
        "failure": {
            "failedStepIndex": failure.failed_step_index,
            "failedStepName": failure.failed_step_name,
            "reason": failure.reason,
            "message": failure.message,
            "exitCode": failure.exit_code,
            "failedAt": _time(failure.failed_at),
            "executionTime": f"{failure.execution_seconds:g}s"
            if failure.execution_seconds is not None
            else None,
        },
        "executionRef": item.execution_ref,
        "engineSummary": item.engine_summary,
    }


def _recovery(recovery: RecoveryContext | None) -> dict[str, Any] | None:
    if recovery is None:
        return None
    return {
        "attemptNumber": recovery.attempt_number,
        "maxAttempts": recovery.max_attempts,
        "previousExecutions": [_execution(e) for e in recovery.previous_executions],
    }


def request_json(incident: Incident) -> dict[str, Any]:
    """The AnalyzeIncidentRequest body for `incident`."""
    i = incident
    body = {
        "remediationId": i.remediation_id,
        "incidentId": i.incident_id,
        "signal": {
            "signalType": i.signal.signal_type,
            "severity": _level(i.signal.severity, "SEVERITY"),
            "component": i.signal.component,
            "alertName": i.signal.alert_name,
            "namespace": i.signal.namespace,
            "resourceKind": i.signal.resource_kind,
            "resourceName": i.signal.resource_name,
        },
        "errorDetails": {
            "errorMessage": i.error_details.error_message,
            "description": i.error_details.description,
            "firingTime": _time(i.error_details.firing_time),
            "receivedTime": _time(i.error_details.received_time),
        },
        "deduplication": {
            "isDuplicate": i.deduplication.is_duplicate,
            "firstSeen": _time(i.deduplication.first_seen),
            "lastSeen": _time(i.deduplication.last_seen),
            "occurrenceCount": i.deduplication.occurrence_count,
            "previousRemediationRef": i.deduplication.previous_remediation_ref,
        },
        "storm": {
            "isStorm": i.storm.is_storm,
            "stormType": i.storm.storm_type,
            "stormWindow": i.storm.storm_window,
            "stormAlertCount": i.storm.storm_alert_count,
            "affectedResources": list(i.storm.affected_resources),
        },
        "cluster": {
            "clusterName": i.cluster.cluster_name,
            "signalSource": i.cluster.signal_source,
            "signalLabels": dict(i.cluster.signal_labels),
        },
        "business": {
            "environment": i.business.environment,
            "priority": i.business.priority,
            "businessCategory": i.business.business_category,
            "riskTolerance": _level(i.business.risk_tolerance, "RISK_LEVEL"),
        },
        "enrichmentResults": {
            "customLabels": {k: list(v) for k, v in i.enrichment.custom_labels.items()},
            "detectedLabels": dict(i.enrichment.detected_labels),
        },
        "recovery": _recovery(i.recovery),
    }
    incident_body = _pruned(body)
    if i.recovery is not None:  # set even when every field is zero
        incident_body["recovery"] = _pruned(_recovery(i.recovery)) or {}
    return {"incident": incident_body}
