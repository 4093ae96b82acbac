"""What a case expects: the acceptable decisions, parameters, target, severity and
root-cause facts (`expected.yaml`), and the review reasons a case may name.

A captured case's `expected.yaml` also says where its decision fields come
from (`label`): the capture itself (`unreviewed: true`, the decision as the
service made it, replayed and diffed but not scored), the reported outcome,
or an operator (`hapi-grpc cases review`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hapi_grpc.cases.constraints import Constraint

__all__ = [
    "REVIEW_REASONS",
    "SEVERITIES",
    "Expected",
    "Fact",
    "Label",
    "Review",
    "ReviewReason",
    "Severity",
    "SeverityRange",
    "Strict",
    "Target",
]

SEVERITIES = ("low", "medium", "high", "critical")
Severity = Literal["low", "medium", "high", "critical"]
# HumanReviewReason without its prefix, lower case (as the scoreboard shows it).
ReviewReason = Literal[
    "no_matching_workflows",
    "workflow_not_found",
    "parameter_validation_failed",
    "low_confidence",
    "llm_output_unparseable",
    "investigation_inconclusive",
    "data_storage_unavailable",
    "llm_unavailable",
    "budget_exhausted",
    "context_window_exceeded",
    "precondition_not_met",
    "policy_requires_review",
    "recovery_attempts_exhausted",
    "repeats_failed_remediation",
    "recurring_remediation",
]
REVIEW_REASONS: tuple[str, ...] = get_args(ReviewReason)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Target(Strict):
    kind: str
    name: str
    namespace: str = ""
    api_group: str | None = None  # None: not checked


class SeverityRange(Strict):
    min: Severity = "low"
    max: Severity = "critical"

    @model_validator(mode="after")
    def _ordered(self) -> SeverityRange:
        if SEVERITIES.index(self.min) > SEVERITIES.index(self.max):
            raise ValueError(f"severity min {self.min} is above max {self.max}")
        return self

    def contains(self, severity: str) -> bool:
        if severity not in SEVERITIES:
            return False
        rank = SEVERITIES.index
        return rank(self.min) <= rank(severity) <= rank(self.max)


class Fact(Strict):
    """The root cause must mention one of `any` (case-insensitive substrings)."""

    any: tuple[str, ...] = Field(min_length=1)


class Review(Strict):
    """Human review is the right outcome; `reasons` empty = any reason is acceptable."""

    reasons: tuple[ReviewReason, ...] = ()


class Label(Strict):
    """Who set a case's decision fields: `capture` (the service's own decision,
    unreviewed), `outcome` (the remediation's reported outcome) or `operator`."""

    source: Literal["capture", "outcome", "operator"]
    at: datetime
    by: str = Field("", max_length=253)  # the operator, when one labelled it
    note: str = Field("", max_length=4096)


class Expected(Strict):
    # The acceptable decisions: these workflow ids, human review, or either
    # (e.g. review or a read-only diagnostics workflow).
    workflows: tuple[str, ...] = ()
    review: Review | None = None
    # Workflows known to be wrong here (one failed, or an operator rejected it):
    # automating one is unsafe whatever else is acceptable.
    rejected_workflows: tuple[str, ...] = ()
    # The decision fields are the captured decision, not a judgement: runs are
    # compared with it ("same"/"changed") but not scored right or wrong.
    unreviewed: bool = False
    label: Label | None = None
    # Per workflow id ("*" = any selected workflow): parameter name -> constraint.
    parameters: dict[str, dict[str, Constraint]] = Field(default_factory=dict)
    # One acceptable target, or several.
    target_resource: tuple[Target, ...] = ()
    severity: SeverityRange | None = None
    facts: tuple[Fact, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            target = data.get("target_resource")
            if isinstance(target, dict):
                data["target_resource"] = [target]
            data["facts"] = [
                {"any": [f]} if isinstance(f, str) else {"any": f} if isinstance(f, list) else f
                for f in data.get("facts") or []
            ]
        return data

    @model_validator(mode="after")
    def _one_decision(self) -> Expected:
        if not self.workflows and self.review is None:
            raise ValueError("give `workflows` (acceptable ids), `review`, or both")
        for workflow_id in self.parameters:
            if workflow_id != "*" and workflow_id not in self.workflows:
                raise ValueError(f"parameters for {workflow_id!r}, which is not acceptable")
        both = set(self.workflows) & set(self.rejected_workflows)
        if both:
            raise ValueError(f"{', '.join(sorted(both))} both acceptable and rejected")
        if self.unreviewed and self.rejected_workflows:
            raise ValueError("an unreviewed case rejects nothing (no one judged it)")
        return self

    def constraints_for(self, workflow_id: str) -> dict[str, Constraint]:
        return {**self.parameters.get("*", {}), **self.parameters.get(workflow_id, {})}
