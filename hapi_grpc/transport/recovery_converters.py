"""What was executed, to the domain: `hapi.v1.RecoveryContext` (with the checks
protovalidate cannot express) and ReportRemediationOutcome's messages, with the ack back.

A report is kept for months in the remediation history, so it is bounded in
bytes as a whole (`MAX_REPORT_BYTES`, unknown fields included) besides the
bounds of each field (the proto's rules, and those of the parameters).

Design notes: docs/internals.md (`transport/recovery_converters.py`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from google.protobuf import struct_pb2, timestamp_pb2

from hapi.v1 import common_pb2, execution_pb2, incident_pb2, outcome_pb2, recovery_pb2
from hapi_grpc.domain.errors import FieldViolation, InvalidRequestError
from hapi_grpc.domain.execution import ExecutedWorkflow, ExecutionFailure
from hapi_grpc.domain.history import Outcome, OutcomeAck, OutcomeReport
from hapi_grpc.domain.levels import Severity
from hapi_grpc.domain.parameters.limits import MAX_STRING_LENGTH
from hapi_grpc.domain.recovery import OriginalAnalysis, PreviousExecution, RecoveryContext
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.domain.sensitive import clip
from hapi_grpc.domain.workflow_validation import MAX_PROPOSED_PARAMETERS

__all__ = [
    "MAX_PARAMETERS_BYTES",
    "MAX_PARAMETER_NAME_CHARS",
    "MAX_PARAMETER_VALUES",
    "MAX_REPORT_BYTES",
    "SEVERITY_TO_DOMAIN",
    "ack_to_proto",
    "executed_workflow",
    "execution_failure",
    "invalid",
    "recovery_from_proto",
    "report_from_proto",
    "timestamp",
]

MAX_PARAMETER_VALUES = 256
"""JSON values (nested ones included) in one executed workflow's parameters."""

MAX_PARAMETER_NAME_CHARS = 253
"""Characters of one parameter's name."""

MAX_PARAMETERS_BYTES = 16 * 1024
"""Bytes of one executed workflow's parameters as compact JSON (non-ASCII escaped)."""

SEVERITY_TO_DOMAIN = {
    common_pb2.SEVERITY_CRITICAL: Severity.CRITICAL,
    common_pb2.SEVERITY_HIGH: Severity.HIGH,
    common_pb2.SEVERITY_MEDIUM: Severity.MEDIUM,
    common_pb2.SEVERITY_LOW: Severity.LOW,
}
"""The proto's severities as the domain's; UNSPECIFIED is absent (None)."""
_PATH = "incident.recovery.previous_executions"


def recovery_from_proto(incident: incident_pb2.Incident) -> RecoveryContext | None:
    """The incident's recovery context; None when it is not set."""
    if not incident.HasField("recovery"):
        return None
    msg = incident.recovery
    return RecoveryContext(
        attempt_number=msg.attempt_number,
        max_attempts=msg.max_attempts,
        previous_executions=tuple(
            _execution(item, f"{_PATH}[{i}]") for i, item in enumerate(msg.previous_executions)
        ),
    )


def _execution(msg: recovery_pb2.PreviousExecution, path: str) -> PreviousExecution:
    rca = msg.original_analysis
    return PreviousExecution(
        workflow=executed_workflow(msg.workflow, f"{path}.workflow"),
        failure=execution_failure(msg.failure, f"{path}.failure"),
        rationale=msg.rationale,
        original_analysis=OriginalAnalysis(
            summary=rca.summary,
            signal_type=rca.signal_type,
            severity=SEVERITY_TO_DOMAIN.get(rca.severity),
            contributing_factors=tuple(rca.contributing_factors),
        ),
        execution_ref=msg.execution_ref,
        engine_summary=msg.engine_summary,
    )


def executed_workflow(msg: execution_pb2.ExecutedWorkflow, path: str) -> ExecutedWorkflow:
    fields = msg.parameters.fields
    where = f"{path}.parameters"
    if len(fields) > MAX_PROPOSED_PARAMETERS:
        raise invalid(
            where,
            f"at most {MAX_PROPOSED_PARAMETERS} parameters may be given",
            "parameters.max_fields",
        )
    budget = [MAX_PARAMETER_VALUES]
    parameters = {}
    for key in fields:
        path = f'{where}["{clip(key, 64)}"]'
        if len(key) > MAX_PARAMETER_NAME_CHARS:
            raise invalid(
                path,
                f"a parameter name may be at most {MAX_PARAMETER_NAME_CHARS} characters",
                "parameters.name_max_len",
            )
        parameters[key] = _value(fields[key], budget, where, path)
    # Bounded by now (256 values of at most 4,096 characters): cheap to measure.
    size = len(json.dumps(parameters, separators=(",", ":")))
    if size > MAX_PARAMETERS_BYTES:
        raise invalid(
            where,
            f"the parameters may be at most {MAX_PARAMETERS_BYTES} bytes of JSON, got {size}",
            "parameters.max_bytes",
        )
    return ExecutedWorkflow(msg.workflow_id, msg.version, parameters)


def _value(value: struct_pb2.Value, budget: list[int], where: str, path: str) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise invalid(
            where,
            f"at most {MAX_PARAMETER_VALUES} JSON values may be given",
            "parameters.max_values",
        )
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        if len(text) > MAX_STRING_LENGTH:
            raise invalid(
                path,
                f"a string value may be at most {MAX_STRING_LENGTH} characters",
                "parameters.value_max_len",
            )
        return text
    if kind == "number_value":
        number = value.number_value
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        inner = value.struct_value.fields
        for key in inner:
            if len(key) > MAX_STRING_LENGTH:
                raise invalid(
                    path,
                    f"a key may be at most {MAX_STRING_LENGTH} characters",
                    "parameters.value_max_len",
                )
        return {key: _value(inner[key], budget, where, path) for key in inner}
    if kind == "list_value":
        return [_value(item, budget, where, path) for item in value.list_value.values]
    return None


def execution_failure(msg: execution_pb2.ExecutionFailure, path: str) -> ExecutionFailure:
    failed_at = timestamp(msg, "failed_at", path, "must be a valid timestamp (years 0001 to 9999)")
    seconds: float | None = None
    if msg.HasField("execution_time"):
        try:
            seconds = msg.execution_time.ToTimedelta().total_seconds()
        except (ValueError, OverflowError):
            raise invalid(
                f"{path}.execution_time", "must be a valid duration", "duration.valid"
            ) from None
    return ExecutionFailure(
        reason=msg.reason,
        message=msg.message,
        failed_step_index=msg.failed_step_index,
        failed_step_name=msg.failed_step_name,
        exit_code=msg.exit_code if msg.HasField("exit_code") else None,
        failed_at=failed_at,
        execution_seconds=seconds,
    )


def timestamp(
    msg: Any,
    field: str,
    parent: str,
    description: str = "must be a valid timestamp (years 0001 to 9999, nanos in [0, 999999999])",
) -> datetime | None:
    """`msg`'s timestamp `field` as a datetime, None when unset. The proto's rules
    refuse out-of-range values before this runs; should one get here anyway, it
    is still the caller's mistake, never a crash."""
    if not msg.HasField(field):
        return None
    try:
        return getattr(msg, field).ToDatetime(tzinfo=UTC)  # type: ignore[no-any-return]
    except (ValueError, OverflowError, OSError):
        raise invalid(f"{parent}.{field}", description, "timestamp.valid") from None


def invalid(path: str, description: str, rule: str) -> InvalidRequestError:
    """INVALID_ARGUMENT for one field (`path`; "" for the request as a whole)."""
    where = f"{path}: " if path else ""
    return InvalidRequestError(
        f"invalid request: {where}{description}", [FieldViolation(path, description, rule)]
    )


# --- ReportRemediationOutcome ------------------------------------------------

MAX_REPORT_BYTES = 64 * 1024
"""Encoded bytes of one report: more than its bounded fields can fill."""

_OUTCOMES = {
    "succeeded": Outcome.SUCCESS,
    "failed": Outcome.FAILED,
    "declined": Outcome.ESCALATED,
}


def report_from_proto(
    msg: outcome_pb2.ReportRemediationOutcomeRequest, caller: str = ""
) -> OutcomeReport:
    """The domain's report sent by `caller`; the proto's rules have already been
    checked. What was executed and how it failed are read as a recovery
    request's are (same bounds)."""
    size = msg.ByteSize()
    if size > MAX_REPORT_BYTES:
        description = f"a report may be at most {MAX_REPORT_BYTES} bytes, got {size}"
        raise invalid("", description, "request.max_bytes")
    outcome = _OUTCOMES[msg.WhichOneof("result") or "declined"]
    executed = None
    if outcome is not Outcome.ESCALATED:
        executed = executed_workflow(msg.executed, "executed")
    failure = execution_failure(msg.failed, "failed") if outcome is Outcome.FAILED else None
    target = msg.target
    return OutcomeReport(
        remediation_id=msg.remediation_id,
        attempt=msg.attempt,
        target=TargetResource(target.namespace, target.kind, target.name, target.api_group),
        outcome=outcome,
        executed=executed,
        failure=failure,
        declined_reason=msg.declined.reason if outcome is Outcome.ESCALATED else "",
        signal_cleared=msg.signal_cleared if msg.HasField("signal_cleared") else None,
        completed_at=_seconds(msg.completed_at) if msg.HasField("completed_at") else None,
        pre_spec_hash=msg.pre_remediation_spec_hash,
        post_spec_hash=msg.post_remediation_spec_hash,
        caller=caller,
    )


def ack_to_proto(ack: OutcomeAck) -> outcome_pb2.ReportRemediationOutcomeResponse:
    recorded = timestamp_pb2.Timestamp()
    recorded.FromNanoseconds(int(ack.recorded_at * 1e9))
    return outcome_pb2.ReportRemediationOutcomeResponse(
        already_recorded=ack.already_recorded,
        recorded_at=recorded,
        decision_known=ack.decision_known,
    )


def _seconds(ts: timestamp_pb2.Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9
