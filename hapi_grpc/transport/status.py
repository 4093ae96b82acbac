"""Domain errors -> gRPC status codes, in one place.

Rich details follow the google.rpc model (`grpc-status-details-bin`), so Go
and Python clients read `google.rpc.BadRequest` field violations with their
standard helpers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from hapi_grpc.domain import errors
from hapi_grpc.security.auth import end_call

__all__ = ["bad_request", "code_for", "end_call", "retry_info", "rich_status", "status_for"]

log = logging.getLogger(__name__)

INTERNAL_MESSAGE = "internal error; the server logged the details"

_CODES: tuple[tuple[type[errors.HapiError], grpc.StatusCode], ...] = (
    (errors.InvalidRequestError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.WorkflowNotFoundError, grpc.StatusCode.NOT_FOUND),
    (errors.CatalogUnavailableError, grpc.StatusCode.UNAVAILABLE),
    (errors.LLMUnavailableError, grpc.StatusCode.UNAVAILABLE),
    (errors.LLMResponseError, grpc.StatusCode.UNAVAILABLE),
    (errors.BudgetExhaustedError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (errors.ResourceExhaustedError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.IncidentConflictError, grpc.StatusCode.ALREADY_EXISTS),
    (errors.OutcomeConflictError, grpc.StatusCode.ALREADY_EXISTS),
    (errors.RemediationTargetError, grpc.StatusCode.PERMISSION_DENIED),
    (errors.PermissionDeniedError, grpc.StatusCode.PERMISSION_DENIED),
    (errors.AuthorizationUnavailableError, grpc.StatusCode.UNAVAILABLE),
    (errors.HistoryUnavailableError, grpc.StatusCode.UNAVAILABLE),
)


def code_for(exc: BaseException) -> grpc.StatusCode:
    """The status code for an exception; INTERNAL for anything unexpected."""
    for cls, code in _CODES:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.INTERNAL


def rich_status(code: grpc.StatusCode, message: str, details: Iterable[object] = ()) -> grpc.Status:
    """A grpc.Status carrying google.rpc details in the trailing metadata."""
    status = status_pb2.Status(code=code.value[0], message=message)
    for detail in details:
        packed = any_pb2.Any()
        packed.Pack(detail)  # type: ignore[arg-type]
        status.details.append(packed)
    return rpc_status.to_status(status)


def bad_request(violations: Iterable[errors.FieldViolation]) -> error_details_pb2.BadRequest:
    return error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(
                field=v.field, description=v.description, reason=v.rule_id
            )
            for v in violations
        ]
    )


def status_for(exc: BaseException) -> grpc.Status:
    """Translate an exception into the status the caller receives."""
    code = code_for(exc)
    if code is grpc.StatusCode.INTERNAL:
        # A bug: say nothing about it to the caller, everything in the log.
        log.error("unhandled error", exc_info=exc)
        return rich_status(code, INTERNAL_MESSAGE)
    assert isinstance(exc, errors.HapiError)
    details: list[object] = []
    if isinstance(exc, errors.InvalidRequestError) and exc.violations:
        details.append(bad_request(exc.violations))
    elif isinstance(exc, errors.WorkflowNotFoundError):
        details.append(
            error_details_pb2.ResourceInfo(
                resource_type="workflow", resource_name=exc.workflow_id, description=exc.message
            )
        )
    elif isinstance(exc, errors.ResourceExhaustedError) and exc.retry_after is not None:
        details.append(retry_info(exc.retry_after))
    return rich_status(code, exc.message, details)


def retry_info(seconds: float) -> error_details_pb2.RetryInfo:
    """`google.rpc.RetryInfo` asking the caller to wait `seconds` before retrying."""
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromNanoseconds(int(max(seconds, 0.0) * 1e9))
    return info
