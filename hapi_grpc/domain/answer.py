"""Reading the model's final answer (ADR-038 "OUTPUT FORMAT" and "Response Validation").

`parse_final_answer` finds the JSON object in the model's text (bare, in a
```json fence, or surrounded by prose: `answer_json`), accepts the ADR's legacy names
(`selected_playbook`/`playbook_id`, a `strategies` list) and checks the
contract's shape: required fields, confidence in [0, 1], severity and risk in
their enums. Free text is redacted here (`sensitive.redact`), once, because
it reaches responses and stream events. It knows nothing about the catalog;
the engine checks the workflow id, version and parameters afterwards.

The text is only ever parsed as JSON, never evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hapi_grpc.domain.answer_json import extract_json_object
from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.domain.result import (
    AlternativeWorkflow,
    ContextUsed,
    TargetResource,
    WorkflowSelection,
)
from hapi_grpc.domain.sensitive import redact

__all__ = [
    "AnswerFormatError",
    "FinalAnswer",
    "extract_json_object",
    "parse_final_answer",
]

# Bounds: the model's text is untrusted input.
_MAX_TEXT_CHARS = 4000
_MAX_WARNINGS = 20
_MAX_ALTERNATIVES = 10
_PROBLEMS_SHOWN = 10


class AnswerFormatError(Exception):
    """The answer is not the JSON contract; `problems` tell the model what to fix."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    analysis_summary: str
    root_cause_assessment: str
    rca_severity: Severity
    selected: WorkflowSelection | None  # proposed: the engine checks it (`final_check`)
    alternatives: tuple[AlternativeWorkflow, ...] = ()
    warnings: tuple[str, ...] = ()
    context_used: ContextUsed | None = None
    target_resource: TargetResource | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


# --- the contract ---------------------------------------------------------------


def _fold(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _clip(value: Any) -> Any:
    """Free text of the answer: redacted (it leaves the process) and bounded."""
    if not isinstance(value, str):
        return value
    value = redact(value)
    if len(value) > _MAX_TEXT_CHARS:
        return value[: _MAX_TEXT_CHARS - 1] + "…"
    return value


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class _Selection(_Lenient):
    workflow_id: str = Field(min_length=1, max_length=128)
    version: str = ""
    confidence: float = Field(ge=0.0, le=1.0)
    rationale: str = ""
    estimated_risk: RiskLevel
    parameters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("estimated_risk", mode="before")
    @classmethod
    def _fold_risk(cls, value: Any) -> Any:
        return _fold(value)

    @field_validator("rationale", mode="before")
    @classmethod
    def _clip_text(cls, value: Any) -> Any:
        return _clip(value)

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        if value is None:
            return ""
        return str(value) if isinstance(value, int | float) else value

    @field_validator("parameters", mode="before")
    @classmethod
    def _null_parameters(cls, value: Any) -> Any:
        return {} if value is None else value


class _Alternative(_Lenient):
    workflow_id: str = Field(min_length=1, max_length=128)
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    rationale: str = ""

    @field_validator("rationale", mode="before")
    @classmethod
    def _clip_text(cls, value: Any) -> Any:
        return _clip(value)


class _FreeText(_Lenient):
    """Every field is model text that reaches the response like any other: clipped."""

    @field_validator("*", mode="before")
    @classmethod
    def _clip_text(cls, value: Any) -> Any:
        return _clip(value)


class _Context(_FreeText):
    cluster_state: str = ""
    resource_availability: str = ""
    blast_radius: str = ""


class _Target(_FreeText):
    namespace: str = ""
    kind: str = ""
    name: str = ""
    api_group: str = ""


class _Answer(_Lenient):
    analysis_summary: str
    root_cause_assessment: str
    rca_severity: Severity
    selected_workflow: _Selection | None = None
    alternative_workflows: list[_Alternative] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    context_used: _Context | None = None
    target_resource: _Target | None = None

    @field_validator("rca_severity", mode="before")
    @classmethod
    def _fold_severity(cls, value: Any) -> Any:
        return _fold(value)

    @field_validator("analysis_summary", "root_cause_assessment", mode="before")
    @classmethod
    def _clip_text(cls, value: Any) -> Any:
        return _clip(value)

    @field_validator("alternative_workflows", "warnings", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("target_resource", mode="before")
    @classmethod
    def _target_text(cls, value: Any) -> Any:
        # ADR-038 also spells it "namespace/kind/name" or "kind/name".
        if isinstance(value, str):
            parts = [p for p in value.split("/") if p]
            if len(parts) == 2:
                return {"kind": parts[0], "name": parts[1]}
            if len(parts) == 3:
                return {"namespace": parts[0], "kind": parts[1], "name": parts[2]}
            if len(parts) == 4:
                return {
                    "namespace": parts[0],
                    "api_group": parts[1],
                    "kind": parts[2],
                    "name": parts[3],
                }
            return None
        return value


def _normalise_legacy(obj: dict[str, Any]) -> dict[str, Any]:
    """Map ADR-038's playbook-era names onto the workflow contract."""
    obj = dict(obj)
    if "selected_workflow" not in obj and "selected_playbook" in obj:
        obj["selected_workflow"] = obj.pop("selected_playbook")
    if "alternative_workflows" not in obj and "alternative_playbooks" in obj:
        obj["alternative_workflows"] = obj.pop("alternative_playbooks")
    strategies = obj.get("strategies")
    if "selected_workflow" not in obj and isinstance(strategies, list):
        obj["selected_workflow"] = strategies[0] if strategies else None
        obj.setdefault("alternative_workflows", strategies[1:])
    if "selected_workflow" in obj:
        obj["selected_workflow"] = _rename_playbook_id(obj["selected_workflow"])
    alternatives = obj.get("alternative_workflows")
    if isinstance(alternatives, list):
        obj["alternative_workflows"] = [_rename_playbook_id(a) for a in alternatives]
    return obj


def _rename_playbook_id(item: Any) -> Any:
    if isinstance(item, dict) and "workflow_id" not in item and "playbook_id" in item:
        item = dict(item)
        item["workflow_id"] = item.pop("playbook_id")
    return item


def parse_final_answer(text: str) -> FinalAnswer:
    """Parse and shape-check the model's final answer; AnswerFormatError says what is wrong."""
    obj = extract_json_object(text)
    if obj is None:
        raise AnswerFormatError(
            ["no JSON object found: reply with exactly one JSON object in the required format"]
        )
    obj = _normalise_legacy(obj)
    try:
        parsed = _Answer.model_validate(obj)
    except ValidationError as exc:
        raise AnswerFormatError(_problems(exc)) from None
    s = parsed.selected_workflow
    return FinalAnswer(
        analysis_summary=parsed.analysis_summary,
        root_cause_assessment=parsed.root_cause_assessment,
        rca_severity=parsed.rca_severity,
        selected=WorkflowSelection(**s.model_dump()) if s is not None else None,
        alternatives=tuple(
            AlternativeWorkflow(a.workflow_id, a.confidence, a.rationale)
            for a in parsed.alternative_workflows[:_MAX_ALTERNATIVES]
        ),
        warnings=tuple(str(_clip(w)) for w in parsed.warnings[:_MAX_WARNINGS]),
        context_used=ContextUsed(**parsed.context_used.model_dump())
        if parsed.context_used
        else None,
        target_resource=TargetResource(**parsed.target_resource.model_dump())
        if parsed.target_resource and parsed.target_resource.name
        else None,
        raw=obj,
    )


def _problems(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors(include_url=False)[:_PROBLEMS_SHOWN]:
        where = ".".join(str(part) for part in error["loc"]) or "answer"
        if error["type"] == "missing":
            problems.append(f"{where}: required field is missing")
        else:
            problems.append(f"{where}: {error['msg']}")
    return problems
