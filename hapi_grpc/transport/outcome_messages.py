"""ReportRemediationOutcome's messages to the domain's report, and its ack back.

A report is kept for months in the remediation history, so it is bounded in
bytes as a whole (`MAX_REPORT_BYTES`, unknown fields included) besides the
bounds of each field (the proto's rules, and those of the parameters)."""

from __future__ import annotations

from google.protobuf import timestamp_pb2

from hapi.v1 import outcome_pb2
from hapi_grpc.domain.errors import FieldViolation, InvalidRequestError
from hapi_grpc.domain.history import Outcome, OutcomeAck, OutcomeReport
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.transport.recovery_converters import executed_workflow, execution_failure

__all__ = ["MAX_REPORT_BYTES", "ack_to_proto", "report_from_proto"]

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
        raise InvalidRequestError(
            f"invalid request: {description}",
            [FieldViolation("", description, "request.max_bytes")],
        )
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
