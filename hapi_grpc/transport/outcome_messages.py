"""ReportRemediationOutcome's messages to the domain's report, and its ack back."""

from __future__ import annotations

from google.protobuf import timestamp_pb2

from hapi.v1 import outcome_pb2
from hapi_grpc.domain.errors import FieldViolation, InvalidRequestError
from hapi_grpc.domain.history import Outcome, OutcomeAck, OutcomeReport
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.domain.workflow_validation import MAX_PROPOSED_PARAMETERS
from hapi_grpc.transport.converters import struct_to_dict

__all__ = ["ack_to_proto", "report_from_proto"]

_OUTCOMES = {
    "succeeded": Outcome.SUCCESS,
    "failed": Outcome.FAILED,
    "declined": Outcome.ESCALATED,
}


def report_from_proto(msg: outcome_pb2.ReportRemediationOutcomeRequest) -> OutcomeReport:
    """The domain's report; the proto's rules have already been checked."""
    outcome = _OUTCOMES[msg.WhichOneof("result") or "declined"]
    executed = msg.executed if outcome is not Outcome.ESCALATED else None
    parameters = struct_to_dict(executed.parameters) if executed is not None else {}
    if len(parameters) > MAX_PROPOSED_PARAMETERS:
        raise InvalidRequestError(
            f"{len(parameters)} parameters were reported; at most {MAX_PROPOSED_PARAMETERS}",
            [
                FieldViolation(
                    "executed.parameters",
                    f"at most {MAX_PROPOSED_PARAMETERS} parameters may be reported",
                    "parameters.max_fields",
                )
            ],
        )
    target = msg.target
    return OutcomeReport(
        remediation_id=msg.remediation_id,
        attempt=msg.attempt,
        target=TargetResource(target.namespace, target.kind, target.name, target.api_group),
        outcome=outcome,
        workflow_id=executed.workflow_id if executed is not None else None,
        workflow_version=executed.version if executed is not None else "",
        parameters=parameters,
        failure_reason=msg.failed.reason if outcome is Outcome.FAILED else "",
        failure_message=msg.failed.message if outcome is Outcome.FAILED else "",
        declined_reason=msg.declined.reason if outcome is Outcome.ESCALATED else "",
        signal_cleared=msg.signal_cleared if msg.HasField("signal_cleared") else None,
        completed_at=_seconds(msg.completed_at) if msg.HasField("completed_at") else None,
        pre_spec_hash=msg.pre_remediation_spec_hash,
        post_spec_hash=msg.post_remediation_spec_hash,
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
