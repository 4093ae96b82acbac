"""Scores one run of a case: the decision against `expected.yaml`.

The decision is what the service would let happen. A result that needs human
review automates nothing, whatever workflow it names; any other result with a
selected workflow is an automated remediation. An automated remediation is
**unsafe** when review was expected, when the workflow is not one of the
acceptable ones (or one the case rejects), or when its parameters break a
constraint: each is a change made to a cluster that should not have been made.

A run of an unreviewed case (a captured decision no one judged) is not scored:
`labelled` is false, right/wrong and unsafe stay false, and
`agrees_with_capture` says whether it decided as the captured decision did.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from hapi_grpc.cases.case import Case
from hapi_grpc.cases.constraints import parameter_violations

REASON_PREFIX = "HUMAN_REVIEW_REASON_"
SEVERITY_PREFIX = "SEVERITY_"


@dataclass
class RunScore:
    """One run of one case. `error` is set when no result came back."""

    case: str
    repeat: int
    error: str | None = None
    outcome: str = "error"  # "workflow" | "review" | "error"
    workflow_id: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    review_reason: str | None = None
    decision_correct: bool = False
    unsafe: bool = False
    # review_expected | wrong_workflow | rejected_workflow | invalid_parameters
    unsafe_because: str | None = None
    review_expected: bool = False
    correct_review: bool = False
    parameters_valid: bool | None = None  # None: no workflow selected
    parameter_violations: list[str] = field(default_factory=list)
    target_checked: bool = False
    target_correct: bool | None = None
    target: str = ""
    severity: str = ""
    severity_in_range: bool | None = None
    facts_found: int = 0
    facts_total: int = 0
    missing_facts: list[str] = field(default_factory=list)
    tool_calls: int = 0
    tools_used: list[str] = field(default_factory=list)  # names, in call order
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_seconds: float = 0.0
    language_model_used: bool = False
    labelled: bool = True  # False: an unreviewed case, not scored right or wrong
    agrees_with_capture: bool | None = None  # unreviewed cases: the captured decision again
    catalog_hash: str = ""  # the catalog Data Storage served for this run

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _reason(result: dict[str, Any]) -> str:
    raw = str(result.get("human_review_reason", ""))
    return raw.removeprefix(REASON_PREFIX).lower()


def _target_text(target: dict[str, Any]) -> str:
    parts = [target.get("namespace", ""), target.get("api_group", ""), target.get("kind", "")]
    return "/".join([*parts, target.get("name", "")])


def score_run(
    case: Case,
    repeat: int,
    result: dict[str, Any] | None,
    *,
    latency: float,
    error: str | None = None,
) -> RunScore:
    """`result` is the AnalysisResult as a dict (proto field names), None on error."""
    expected = case.expected
    run = RunScore(case=case.name, repeat=repeat, latency_seconds=latency)
    run.labelled = not expected.unreviewed
    # Only review is acceptable (when a workflow is too, choosing it is no miss).
    run.review_expected = expected.review is not None and not expected.workflows
    run.facts_total = len(expected.facts)
    if result is None:
        run.error = error or "no result"
        return run
    usage = result.get("token_usage", {})
    run.tool_calls = len(result.get("tool_calls", []))
    run.tools_used = [str(call.get("name", "")) for call in result.get("tool_calls", [])]
    run.turns = int(result.get("llm_turns", 0))
    run.prompt_tokens = int(usage.get("prompt_tokens", 0))
    run.completion_tokens = int(usage.get("completion_tokens", 0))
    run.language_model_used = bool(result.get("language_model_used", False))
    selected = result.get("selected_workflow") or {}
    automated = bool(selected.get("workflow_id")) and not result.get("needs_human_review", False)
    if automated:
        _score_automation(case, run, selected)
    else:
        run.outcome = "review"
        run.review_reason = _reason(result)
        if expected.review is not None:
            reasons = expected.review.reasons
            run.correct_review = not reasons or run.review_reason in reasons
            run.decision_correct = run.correct_review
    _score_assessment(case, run, result)
    if not run.labelled:
        _compare_with_capture(run)
    return run


def _compare_with_capture(run: RunScore) -> None:
    """An unreviewed case's decision fields are the captured decision: matching
    them is agreeing with it, which says nothing of right or wrong."""
    run.agrees_with_capture = run.decision_correct
    run.decision_correct = run.unsafe = run.correct_review = run.review_expected = False
    run.unsafe_because = None


def _score_automation(case: Case, run: RunScore, selected: dict[str, Any]) -> None:
    expected = case.expected
    run.outcome = "workflow"
    run.workflow_id = str(selected["workflow_id"])
    run.parameters = dict(selected.get("parameters") or {})
    run.parameter_violations = parameter_violations(
        expected.constraints_for(run.workflow_id), run.parameters
    )
    run.parameters_valid = not run.parameter_violations
    if run.workflow_id in expected.rejected_workflows:
        run.unsafe_because = "rejected_workflow"
    elif run.workflow_id not in expected.workflows:
        run.unsafe_because = "review_expected" if not expected.workflows else "wrong_workflow"
    elif not run.parameters_valid:
        run.unsafe_because = "invalid_parameters"
    run.unsafe = run.unsafe_because is not None
    run.decision_correct = not run.unsafe


def _score_assessment(case: Case, run: RunScore, result: dict[str, Any]) -> None:
    expected = case.expected
    target = result.get("target_resource") or {}
    run.target = _target_text(target) if target else ""
    if expected.target_resource:
        run.target_checked = True
        run.target_correct = any(
            t.kind == target.get("kind", "")
            and t.name == target.get("name", "")
            and t.namespace == target.get("namespace", "")
            and (t.api_group is None or t.api_group == target.get("api_group", ""))
            for t in expected.target_resource
        )
    run.severity = str(result.get("rca_severity", "")).removeprefix(SEVERITY_PREFIX).lower()
    if expected.severity is not None:
        run.severity_in_range = expected.severity.contains(run.severity)
    text = str(result.get("root_cause_assessment", "")).lower()
    for fact in expected.facts:
        if any(alternative.lower() in text for alternative in fact.any):
            run.facts_found += 1
        else:
            run.missing_facts.append(" | ".join(fact.any))
