"""Conversions between hapi.v1 protobuf messages and domain types.

Kept apart from the servicers so each RPC reads as: convert in, call the
domain, convert out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

from hapi.v1 import analysis_pb2, common_pb2, incident_pb2, tools_pb2, validation_pb2
from hapi_grpc.domain import incident as d
from hapi_grpc.domain import result as r
from hapi_grpc.domain.catalog import WorkflowSchema
from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.domain.parameters import ParameterIssue, ValidationOutcome
from hapi_grpc.transport.recovery_converters import (
    SEVERITY_TO_DOMAIN,
    recovery_from_proto,
    timestamp,
)
from hapi_grpc.transport.tool_arguments import json_safe, typed_arguments, typed_tool

# The domain's levels and the proto enums, both ways; UNSPECIFIED is None.
_SEVERITY_TO_PROTO: dict[Severity | None, int] = {v: k for k, v in SEVERITY_TO_DOMAIN.items()}
_RISK_TO_DOMAIN = {
    common_pb2.RISK_LEVEL_LOW: RiskLevel.LOW,
    common_pb2.RISK_LEVEL_MEDIUM: RiskLevel.MEDIUM,
    common_pb2.RISK_LEVEL_HIGH: RiskLevel.HIGH,
}
_RISK_TO_PROTO = {v: k for k, v in _RISK_TO_DOMAIN.items()}


# --- request -> domain ---------------------------------------------------------


def incident_from_proto(msg: incident_pb2.Incident) -> d.Incident:
    """Domain incident from a validated request message."""
    sig = msg.signal
    err = msg.error_details
    dedup = msg.deduplication
    storm = msg.storm
    cluster = msg.cluster
    business = msg.business
    enrichment = msg.enrichment_results
    return d.Incident(
        remediation_id=msg.remediation_id,
        incident_id=msg.incident_id,
        signal=d.SignalInfo(
            signal_type=sig.signal_type,
            severity=SEVERITY_TO_DOMAIN.get(sig.severity),
            component=sig.component,
            alert_name=sig.alert_name,
            namespace=sig.namespace,
            resource_kind=sig.resource_kind,
            resource_name=sig.resource_name,
        ),
        error_details=d.ErrorDetails(
            error_message=err.error_message,
            description=err.description,
            firing_time=timestamp(err, "firing_time", "incident.error_details"),
            received_time=timestamp(err, "received_time", "incident.error_details"),
        ),
        deduplication=d.DeduplicationContext(
            is_duplicate=dedup.is_duplicate,
            first_seen=timestamp(dedup, "first_seen", "incident.deduplication"),
            last_seen=timestamp(dedup, "last_seen", "incident.deduplication"),
            occurrence_count=dedup.occurrence_count,
            previous_remediation_ref=dedup.previous_remediation_ref,
        ),
        storm=d.StormDetection(
            is_storm=storm.is_storm,
            storm_type=storm.storm_type,
            storm_window=storm.storm_window,
            storm_alert_count=storm.storm_alert_count,
            affected_resources=tuple(storm.affected_resources),
        ),
        cluster=d.ClusterContext(
            cluster_name=cluster.cluster_name,
            signal_source=cluster.signal_source,
            signal_labels=dict(cluster.signal_labels),
        ),
        business=d.BusinessContext(
            environment=business.environment,
            priority=business.priority,
            business_category=business.business_category,
            risk_tolerance=_RISK_TO_DOMAIN.get(business.risk_tolerance),
        ),
        enrichment=d.EnrichmentResults(
            # Passed through unchanged (DD-HAPI-001); the proto rules guarantee strings.
            custom_labels={
                key: tuple(str(v) for v in json_format.MessageToDict(values))
                for key, values in enrichment.custom_labels.items()
            },
            detected_labels=struct_to_dict(enrichment.detected_labels),
        ),
        recovery=recovery_from_proto(msg),
    )


def struct_to_dict(value: struct_pb2.Struct) -> dict[str, Any]:
    """JSON object from a Struct. Numbers arrive as floats; the parameter
    validator turns whole numbers back into integers where the schema says so.

    A direct walk rather than json_format.MessageToDict, which takes twice as
    long and raises on a Value with no kind set (read here as null).
    """
    fields = value.fields  # keys, then lookups: the map's items() view is a slow generator
    return {key: _from_value(fields[key]) for key in fields}


def _from_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return struct_to_dict(value.struct_value)
    if kind == "list_value":
        return [_from_value(item) for item in value.list_value.values]
    return None  # null_value, or no kind at all


def dict_to_struct(value: Mapping[str, Any] | None) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    if value:
        out.update(json_safe(value))
    return out


# --- domain -> response ----------------------------------------------------------


def issue_to_proto(issue: ParameterIssue) -> validation_pb2.ParameterError:
    return validation_pb2.ParameterError(
        parameter=issue.parameter,
        code=validation_pb2.ParameterErrorCode.Value(f"PARAMETER_ERROR_CODE_{issue.code.name}"),
        message=issue.message,
    )


def validation_response(
    schema: WorkflowSchema,
    outcome: ValidationOutcome,
    proposed: struct_pb2.Struct | None = None,
) -> validation_pb2.ValidateWorkflowParametersResponse:
    """The RPC's response; `proposed` is the request's Struct, when there is one."""
    response = validation_pb2.ValidateWorkflowParametersResponse(
        workflow_id=schema.workflow_id, workflow_version=schema.version
    )
    # Filled in place: passing built sub-messages to a constructor copies them,
    # and this runs on every ValidateWorkflowParameters call.
    validation = response.validation
    validation.valid = outcome.valid
    if outcome.errors:
        validation.errors.extend(issue_to_proto(i) for i in outcome.errors)
    sanitized = validation.sanitized_parameters
    if proposed is not None and _kept_as_proposed(outcome, proposed):
        sanitized.CopyFrom(proposed)  # a copy costs a quarter of a rebuild
    else:
        sanitized.SetInParent()  # present even when empty
        if outcome.sanitized:
            sanitized.update(json_safe(outcome.sanitized))
    if outcome.stripped:
        validation.stripped_parameters.extend(outcome.stripped)
    return response


def _kept_as_proposed(outcome: ValidationOutcome, proposed: struct_pb2.Struct) -> bool:
    """True when the sanitized parameters are exactly the proposed Struct.

    They are when every proposed parameter was kept (the sanitized keys are a
    subset of the proposed ones) and every kept value is a scalar: the
    validator keeps a checked scalar unchanged (a whole-number float read as
    an integer is the same Struct number), while array items are not checked
    and may need json_safe.
    """
    kept = outcome.sanitized
    return len(kept) == len(proposed.fields) and not any(
        isinstance(value, list) for value in kept.values()
    )


def attempt_to_proto(attempt: r.ValidationAttempt) -> analysis_pb2.ValidationAttempt:
    return analysis_pb2.ValidationAttempt(
        attempt=attempt.attempt,
        workflow_id=attempt.workflow_id,
        parameters=dict_to_struct(attempt.parameters),
        errors=[issue_to_proto(i) for i in attempt.errors],
        valid=attempt.valid,
        source=analysis_pb2.ValidationSource.Value(f"VALIDATION_SOURCE_{attempt.source.name}"),
    )


def tool_call_to_proto(call: r.ToolCallRecord) -> tools_pb2.ToolCallRecord:
    msg = tools_pb2.ToolCallRecord(
        name=call.name,
        raw_arguments=call.raw_arguments,
        result=call.result,
        status=tools_pb2.ToolCallStatus.Value(f"TOOL_CALL_STATUS_{call.status.name}"),
        duration_seconds=call.duration_seconds,
    )
    typed = typed_tool(call.name)
    if call.served_by is not None:  # a tool server's tool: its own arguments, untyped
        msg.mcp_tool.server, msg.mcp_tool.tool = call.served_by
        if isinstance(call.arguments, dict):
            try:
                msg.mcp_tool.arguments.CopyFrom(dict_to_struct(call.arguments))
            except (TypeError, ValueError):
                pass  # the raw text is still recorded
        return msg
    if typed is not None and isinstance(call.arguments, dict):
        args = typed_arguments(call.name, call.arguments)
        if args is not None:  # None: the raw text is still recorded; typing is best effort
            getattr(msg, typed).CopyFrom(args)
    return msg


T = TypeVar("T")
M = TypeVar("M", bound=Message)


def _converted(known: Mapping[int, Message], item: T, convert: Callable[[T], M]) -> M:
    found = known.get(id(item))
    return convert(item) if found is None else found  # type: ignore[return-value]


def turn_to_proto(turn: r.LlmTurn) -> analysis_pb2.LlmTurn:
    return analysis_pb2.LlmTurn(
        turn=turn.turn,
        content=turn.content,
        tool_calls=list(turn.tool_calls),
        token_usage=analysis_pb2.TokenUsage(
            prompt_tokens=turn.prompt_tokens, completion_tokens=turn.completion_tokens
        ),
    )


def result_to_proto(
    res: r.AnalysisResult, converted: Mapping[int, Message] | None = None
) -> analysis_pb2.AnalysisResult:
    """The result as a message. `converted` maps `id()` of tool-call records and
    validation attempts already converted (as stream events) to their messages:
    they are reused rather than converted again (typed tool arguments are slow)."""
    known = converted or {}
    msg = analysis_pb2.AnalysisResult(
        remediation_id=res.remediation_id,
        incident_id=res.incident_id,
        analysis_summary=res.analysis_summary,
        root_cause_assessment=res.root_cause_assessment,
        rca_severity=_SEVERITY_TO_PROTO.get(res.rca_severity, common_pb2.SEVERITY_UNSPECIFIED),
        alternative_workflows=[
            analysis_pb2.AlternativeWorkflow(
                workflow_id=a.workflow_id,
                confidence=a.confidence,
                rationale=a.rationale,
                action_type=a.action_type,
            )
            for a in res.alternative_workflows
        ],
        warnings=list(res.warnings),
        needs_human_review=res.needs_human_review,
        human_review_reason=(
            analysis_pb2.HumanReviewReason.Value(
                f"HUMAN_REVIEW_REASON_{res.human_review_reason.name}"
            )
            if res.human_review_reason is not None
            else analysis_pb2.HUMAN_REVIEW_REASON_UNSPECIFIED
        ),
        validation_attempts=[
            _converted(known, a, attempt_to_proto) for a in res.validation_attempts
        ],
        tool_calls=[_converted(known, c, tool_call_to_proto) for c in res.tool_calls],
        model=res.model,
        language_model_used=res.language_model_used,
        token_usage=analysis_pb2.TokenUsage(
            prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens
        ),
        llm_turns=res.llm_turns,
        duration_seconds=res.duration_seconds,
    )
    if res.target_resource is not None:
        t = res.target_resource
        msg.target_resource.CopyFrom(
            analysis_pb2.TargetResource(
                namespace=t.namespace, kind=t.kind, name=t.name, api_group=t.api_group
            )
        )
    if res.selected_workflow is not None:
        s = res.selected_workflow
        msg.selected_workflow.CopyFrom(
            analysis_pb2.SelectedWorkflow(
                workflow_id=s.workflow_id,
                version=s.version,
                confidence=s.confidence,
                rationale=s.rationale,
                estimated_risk=_RISK_TO_PROTO.get(
                    s.estimated_risk, common_pb2.RISK_LEVEL_UNSPECIFIED
                ),
                parameters=dict_to_struct(s.parameters),
                action_type=s.action_type,
            )
        )
    if res.context_used is not None:
        c = res.context_used
        msg.context_used.CopyFrom(
            analysis_pb2.ContextUsed(
                cluster_state=c.cluster_state,
                resource_availability=c.resource_availability,
                blast_radius=c.blast_radius,
            )
        )
    return msg
