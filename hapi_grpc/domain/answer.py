"""Reading the model's final answer (ADR-038 "OUTPUT FORMAT" and "Response Validation").

Design notes: docs/internals.md (`domain/answer.py`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from hapi_grpc.domain.answer_json import extract_json_object
from hapi_grpc.domain.catalog import NONE_IS_EMPTY
from hapi_grpc.domain.levels import Severity
from hapi_grpc.domain.result import (
    AlternativeWorkflow,
    ContextUsed,
    FreeText,
    TargetResource,
    WorkflowSelection,
    folded,
)

__all__ = [
    "AnswerFormatError",
    "FinalAnswer",
    "extract_json_object",
    "parse_final_answer",
]

# Bounds: the model's text is untrusted input (free text: `result.FreeText`).
_MAX_WARNINGS = 20
_MAX_ALTERNATIVES = 10
_PROBLEMS_SHOWN = 10


class AnswerFormatError(Exception):
    """The answer is not the JSON contract; `problems` tell the model what to fix."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


def _target_text(value: Any) -> Any:
    """ADR-038 also spells the target "namespace/kind/name" or "kind/name"."""
    if not isinstance(value, str):
        return value
    parts = [p for p in value.split("/") if p]
    names = {
        2: ("kind", "name"),
        3: ("namespace", "kind", "name"),
        4: ("namespace", "api_group", "kind", "name"),
    }.get(len(parts))
    return dict(zip(names, parts, strict=True)) if names else None


class FinalAnswer(BaseModel):
    """The model's final answer, validated into the result's records; `selected`
    is as proposed: the engine checks it (`final_check`)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, frozen=True)

    analysis_summary: FreeText
    root_cause_assessment: FreeText
    rca_severity: Annotated[Severity, BeforeValidator(folded)]
    selected: WorkflowSelection | None = Field(None, validation_alias="selected_workflow")
    alternatives: Annotated[
        tuple[AlternativeWorkflow, ...],
        NONE_IS_EMPTY,
        AfterValidator(lambda items: items[:_MAX_ALTERNATIVES]),
    ] = Field((), validation_alias="alternative_workflows")
    warnings: Annotated[
        tuple[FreeText, ...],
        NONE_IS_EMPTY,
        AfterValidator(lambda items: items[:_MAX_WARNINGS]),
    ] = ()
    context_used: ContextUsed | None = None
    target_resource: Annotated[
        TargetResource | None,
        BeforeValidator(_target_text),
        AfterValidator(lambda target: target if target is not None and target.name else None),
    ] = None


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
    try:
        return FinalAnswer.model_validate(_normalise_legacy(obj))
    except ValidationError as exc:
        raise AnswerFormatError(_problems(exc)) from None


def _problems(exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors(include_url=False)[:_PROBLEMS_SHOWN]:
        where = ".".join(str(part) for part in error["loc"]) or "answer"
        if error["type"] == "missing":
            problems.append(f"{where}: required field is missing")
        else:
            problems.append(f"{where}: {error['msg']}")
    return problems
