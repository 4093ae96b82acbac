"""Domain errors.

The transport layer maps each class to one gRPC status code in a single place
(`hapi_grpc.transport.status`); domain code raises these and nothing else for
conditions a caller can act on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldViolation:
    """One problem with one field of a request (maps to google.rpc.BadRequest)."""

    field: str
    description: str
    rule_id: str = ""


class HapiError(Exception):
    """Base class of every error the domain raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequestError(HapiError):
    """The caller sent something malformed (INVALID_ARGUMENT)."""

    def __init__(self, message: str, violations: list[FieldViolation] | None = None) -> None:
        super().__init__(message)
        self.violations: list[FieldViolation] = list(violations or [])


class WorkflowNotFoundError(HapiError):
    """The workflow id is unknown to the catalog (NOT_FOUND)."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__(f"workflow {workflow_id!r} not found in the catalog")
        self.workflow_id = workflow_id


class CatalogUnavailableError(HapiError):
    """The workflow catalog cannot answer now: outage, open breaker, timeout (UNAVAILABLE)."""


class CatalogContractError(CatalogUnavailableError):
    """Data Storage answered, but not with what the contract promises (UNAVAILABLE)."""


class LLMUnavailableError(HapiError):
    """The language model provider cannot answer now (UNAVAILABLE)."""


class LLMResponseError(HapiError):
    """The provider answered with something that is not a valid completion."""


class ContextOverflowError(LLMUnavailableError):
    """The conversation does not fit the model's context window.

    Never retried: the same request gets the same refusal. The investigation
    ends with a review reason of its own rather than as an unavailable model.
    """


class BudgetExhaustedError(HapiError):
    """The caller's deadline or one of our own bounds ran out (DEADLINE_EXCEEDED)."""


class ResourceExhaustedError(HapiError):
    """A concurrency or quota limit was hit (RESOURCE_EXHAUSTED).

    `retry_after` (seconds) reaches the caller as `google.rpc.RetryInfo`.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class IncidentConflictError(HapiError):
    """The request reuses an id for a different incident (ALREADY_EXISTS)."""


class OutcomeConflictError(HapiError):
    """A different outcome report under the same (remediation_id, attempt) (ALREADY_EXISTS)."""


class PermissionDeniedError(HapiError):
    """The caller may not do what it asks, here (PERMISSION_DENIED)."""


class AuthorizationUnavailableError(HapiError):
    """The caller's permission cannot be checked now; the call fails closed (UNAVAILABLE)."""


class RemediationTargetError(HapiError):
    """A report names another target than the decision it joins (PERMISSION_DENIED):
    a remediation id is bound to the target its decision was for."""


class HistoryUnavailableError(HapiError):
    """The remediation history could not answer or record (UNAVAILABLE)."""
