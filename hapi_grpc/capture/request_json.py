"""An incident back as the AnalyzeIncidentRequest it came in (proto JSON mapping).

The inverse of `transport.converters.incident_from_proto` (and the recovery
context's converter): a captured case's `request.json` is what a replay sends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.recovery import PreviousExecution, RecoveryContext

__all__ = ["request_json", "set_fields"]


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


def set_fields(**fields: Any) -> dict[str, Any]:
    """`fields` without the unset ones: proto3 JSON leaves out empty strings and
    lists, zeros and false (a flat message: `_pruned` for scalars)."""
    return {key: value for key, value in fields.items() if value}


def request_json(incident: Incident) -> dict[str, Any]:
    """The AnalyzeIncidentRequest body for `incident`.

    Built of its set fields directly (what `_pruned` gives the whole body), the
    labels and the recovery pruned as values: one is written per captured case."""
    i = incident
    signal, details, dedup, storm = i.signal, i.error_details, i.deduplication, i.storm
    cluster, business, enrichment = i.cluster, i.business, i.enrichment
    incident_body = set_fields(
        remediationId=i.remediation_id,
        incidentId=i.incident_id,
        signal=set_fields(
            signalType=signal.signal_type,
            severity=_level(signal.severity, "SEVERITY"),
            component=signal.component,
            alertName=signal.alert_name,
            namespace=signal.namespace,
            resourceKind=signal.resource_kind,
            resourceName=signal.resource_name,
        ),
        errorDetails=set_fields(
            errorMessage=details.error_message,
            description=details.description,
            firingTime=_time(details.firing_time),
            receivedTime=_time(details.received_time),
        ),
        deduplication=set_fields(
            isDuplicate=dedup.is_duplicate,
            firstSeen=_time(dedup.first_seen),
            lastSeen=_time(dedup.last_seen),
            occurrenceCount=dedup.occurrence_count,
            previousRemediationRef=dedup.previous_remediation_ref,
        ),
        storm=set_fields(
            isStorm=storm.is_storm,
            stormType=storm.storm_type,
            stormWindow=storm.storm_window,
            stormAlertCount=storm.storm_alert_count,
            affectedResources=list(storm.affected_resources),
        ),
        cluster=set_fields(
            clusterName=cluster.cluster_name,
            signalSource=cluster.signal_source,
            signalLabels=_pruned(dict(cluster.signal_labels)),
        ),
        business=set_fields(
            environment=business.environment,
            priority=business.priority,
            businessCategory=business.business_category,
            riskTolerance=_level(business.risk_tolerance, "RISK_LEVEL"),
        ),
        enrichmentResults=set_fields(
            customLabels=_pruned({k: list(v) for k, v in enrichment.custom_labels.items()}),
            detectedLabels=_pruned(dict(enrichment.detected_labels)),
        ),
    )
    if i.recovery is not None:  # set even when every field is zero
        incident_body["recovery"] = _pruned(_recovery(i.recovery)) or {}
    return {"incident": incident_body}
