"""The investigation's output (ADR-038 response contract) and its progress events.

Design notes: docs/internals.md (`domain/result.py`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.domain.parameters import ParameterIssue
from hapi_grpc.domain.sensitive import redact

MAX_TEXT_CHARS = 4000


def _outside_text(value: Any) -> Any:
    """Text from outside (a model's answer) reaches responses: redacted and bounded."""
    if not isinstance(value, str):
        return value
    value = redact(value)
    return value[: MAX_TEXT_CHARS - 1] + "…" if len(value) > MAX_TEXT_CHARS else value


def folded(value: Any) -> Any:
    """An enum's text in any case and padding (" High " is "high")."""
    return value.strip().lower() if isinstance(value, str) else value


def _version_text(value: Any) -> Any:
    if value is None:
        return ""
    return str(value) if isinstance(value, int | float) else value


FreeText = Annotated[str, BeforeValidator(_outside_text)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]
WorkflowId = Annotated[str, Field(min_length=1, max_length=128)]
# Known from the catalog only: whatever a model's answer says of it is dropped.
CatalogOnly = Annotated[str, BeforeValidator(lambda _: "")]


class HumanReviewReason(enum.StrEnum):
    """Names match the proto enum HumanReviewReason without its prefix."""

    NO_MATCHING_WORKFLOWS = "NO_MATCHING_WORKFLOWS"
    WORKFLOW_NOT_FOUND = "WORKFLOW_NOT_FOUND"
    PARAMETER_VALIDATION_FAILED = "PARAMETER_VALIDATION_FAILED"
    LOW_CONFIDENCE = "LOW_CONFIDENCE"
    LLM_OUTPUT_UNPARSEABLE = "LLM_OUTPUT_UNPARSEABLE"
    INVESTIGATION_INCONCLUSIVE = "INVESTIGATION_INCONCLUSIVE"
    DATA_STORAGE_UNAVAILABLE = "DATA_STORAGE_UNAVAILABLE"
    LLM_UNAVAILABLE = "LLM_UNAVAILABLE"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    PRECONDITION_NOT_MET = "PRECONDITION_NOT_MET"
    POLICY_REQUIRES_REVIEW = "POLICY_REQUIRES_REVIEW"
    RECOVERY_ATTEMPTS_EXHAUSTED = "RECOVERY_ATTEMPTS_EXHAUSTED"
    REPEATS_FAILED_REMEDIATION = "REPEATS_FAILED_REMEDIATION"
    RECURRING_REMEDIATION = "RECURRING_REMEDIATION"


class ToolCallStatus(enum.StrEnum):
    """Names match the proto enum ToolCallStatus without its prefix."""

    SUCCESS = "SUCCESS"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    ERROR = "ERROR"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    REPEATED = "REPEATED"
    TIMEOUT = "TIMEOUT"


class ValidationSource(enum.StrEnum):
    TOOL = "TOOL"
    FINAL_ANSWER = "FINAL_ANSWER"


@dataclass(frozen=True, slots=True)
class TargetResource:
    namespace: FreeText = ""
    kind: FreeText = ""
    name: FreeText = ""
    api_group: FreeText = ""


@dataclass(frozen=True, slots=True)
class WorkflowSelection:
    """A workflow chosen with its parameters: as the model proposed it, unchecked."""

    workflow_id: WorkflowId
    version: Annotated[str, BeforeValidator(_version_text), Field(default="")]
    confidence: Confidence
    rationale: Annotated[FreeText, Field(default="")]
    estimated_risk: Annotated[RiskLevel, BeforeValidator(folded)]
    parameters: Annotated[
        dict[str, Any],
        BeforeValidator(lambda value: {} if value is None else value),
        Field(default_factory=dict),
    ]
    action_type: CatalogOnly = ""  # the catalog's action type, once the catalog entry is known


@dataclass(frozen=True, slots=True)
class SelectedWorkflow(WorkflowSelection):
    """A selection the final-answer check accepted: the catalog's id and version, the
    validator's parameters. Only a `SelectedWorkflow` reaches a result."""

    @classmethod
    def accepted(
        cls,
        proposed: WorkflowSelection,
        version: str,
        parameters: dict[str, Any],
        action_type: str = "",
    ) -> SelectedWorkflow:
        """`proposed` as checked: the catalog's `version`, the validated `parameters`
        and the catalog's `action_type`."""
        return cls(
            proposed.workflow_id,
            version,
            proposed.confidence,
            proposed.rationale,
            proposed.estimated_risk,
            parameters,
            action_type,
        )


@dataclass(frozen=True, slots=True)
class AlternativeWorkflow:
    workflow_id: WorkflowId
    confidence: Annotated[Confidence, Field(default=0.0)]
    rationale: FreeText = ""
    action_type: CatalogOnly = ""  # the catalog's action type, when the catalog returned it


@dataclass(frozen=True, slots=True)
class ContextUsed:
    cluster_state: FreeText = ""
    resource_availability: FreeText = ""
    blast_radius: FreeText = ""


@dataclass(frozen=True, slots=True)
class ValidationAttempt:
    attempt: int
    workflow_id: str
    parameters: dict[str, Any]  # as proposed; secret-looking values redacted
    errors: tuple[ParameterIssue, ...]
    valid: bool
    source: ValidationSource


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call. `arguments` is the parsed argument object when the JSON
    parsed (a dict), else None; `raw_arguments` keeps what the model sent."""

    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    result: str
    status: ToolCallStatus
    duration_seconds: float
    # (server, tool) for a tool another server declares and serves (see `served_by`).
    served_by: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class LlmTurn:
    turn: int
    content: str
    tool_calls: tuple[str, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(slots=True)
class AnalysisResult:
    remediation_id: str
    incident_id: str = ""
    analysis_summary: str = ""
    root_cause_assessment: str = ""
    rca_severity: Severity | None = None
    target_resource: TargetResource | None = None
    selected_workflow: SelectedWorkflow | None = None
    alternative_workflows: list[AlternativeWorkflow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    context_used: ContextUsed | None = None
    needs_human_review: bool = False
    human_review_reason: HumanReviewReason | None = None
    validation_attempts: list[ValidationAttempt] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    model: str = ""
    language_model_used: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_turns: int = 0
    duration_seconds: float = 0.0


# A progress event of the streaming RPC: exactly one of these types.
AnalysisEvent = LlmTurn | ToolCallRecord | ValidationAttempt | AnalysisResult
