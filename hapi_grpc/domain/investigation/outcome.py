"""Result assembly: the checked answer, or the best partial result, with review reasons.

Design notes: docs/internals.md (`domain/investigation/outcome.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hapi_grpc.domain.answer import FinalAnswer
from hapi_grpc.domain.investigation.final_check import Verdict
from hapi_grpc.domain.investigation.state import InvestigationState
from hapi_grpc.domain.result import (
    AlternativeWorkflow,
    AnalysisResult,
    HumanReviewReason,
)
from hapi_grpc.domain.sensitive import redact
from hapi_grpc.domain.tenancy import Caller

__all__ = ["StopReason", "confine_target", "finished_result", "partial_result"]

# Confidences reported while the catalog was unavailable are scaled by this:
# nothing the model said about workflows could be checked.
DEGRADED_CONFIDENCE_FACTOR = 0.5
_PARTIAL_ALTERNATIVES = 3

_REJECTION_TEXT = {
    HumanReviewReason.PARAMETER_VALIDATION_FAILED: "its parameters did not pass validation",
    HumanReviewReason.WORKFLOW_NOT_FOUND: "it does not match a workflow the catalog returned",
    HumanReviewReason.DATA_STORAGE_UNAVAILABLE: "the catalog was unavailable to validate it",
    HumanReviewReason.BUDGET_EXHAUSTED: "no time was left to validate it",
    HumanReviewReason.LLM_OUTPUT_UNPARSEABLE: "the final answer could not be parsed",
    HumanReviewReason.PRECONDITION_NOT_MET: "a condition it declares does not hold on what"
    " the service observed",
    HumanReviewReason.POLICY_REQUIRES_REVIEW: "an operator policy requires review",
    HumanReviewReason.REPEATS_FAILED_REMEDIATION: "it repeats a failed execution with the"
    " same parameters",
    HumanReviewReason.RECURRING_REMEDIATION: "the target's history shows it recurring or undone",
}
_VETO_REASONS = frozenset(
    {
        HumanReviewReason.PRECONDITION_NOT_MET,
        HumanReviewReason.POLICY_REQUIRES_REVIEW,
        HumanReviewReason.REPEATS_FAILED_REMEDIATION,
        HumanReviewReason.RECURRING_REMEDIATION,
    }
)
_VETOES_SHOWN = 3


@dataclass(frozen=True, slots=True)
class StopReason:
    """Why the conversation ended before an accepted answer."""

    reason: HumanReviewReason
    detail: str


def finished_result(state: InvestigationState, verdict: Verdict) -> AnalysisResult:
    """The result of a conversation that ended with an accepted or terminal verdict."""
    # A terminal failure to parse keeps the analysis of an earlier answer.
    result = _result_from_answer(state, verdict.answer or state.last_answer)
    reason = None if verdict.accepted else verdict.reason
    if verdict.selection is not None:
        result.selected_workflow = verdict.selection
    candidate = None if verdict.accepted else verdict.candidate or state.last_candidate
    if candidate is not None:
        _keep_candidate(state, result, candidate)
        why = _REJECTION_TEXT.get(reason) if reason is not None else None
        result.warnings.append(
            f"Workflow {candidate.workflow_id[:128]!r} was proposed but not selected:"
            f" {why or 'it could not be checked'}."
        )
    if _catalog_never_answered(state) or reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE:
        reason = HumanReviewReason.DATA_STORAGE_UNAVAILABLE
        _lower_confidence(result)
    if reason is None:
        reason = _review_reason_of_accepted(state, result)
    if reason in _VETO_REASONS:
        _name_vetoes(state, result)
    return _with_review_reason(result, reason)


def partial_result(state: InvestigationState, stop: StopReason) -> AnalysisResult:
    """The best result available when a bound or the model ended the conversation."""
    result = _result_from_answer(state, state.last_answer)
    if state.last_answer is None:
        result.analysis_summary = f"Investigation incomplete: {stop.detail}."
        result.alternative_workflows = _hits_as_alternatives(state)
    if state.last_candidate is not None:
        _keep_candidate(state, result, state.last_candidate)
    result.warnings.append(f"Investigation incomplete: {stop.detail}.")
    if _catalog_never_answered(state):
        _lower_confidence(result)
    _name_vetoes(state, result)
    return _with_review_reason(result, stop.reason)


def _name_vetoes(state: InvestigationState, result: AnalysisResult) -> None:
    """Each distinct veto (the condition or rule and what was observed) as a warning."""
    gate = state.selection_gate
    shown = dict.fromkeys([*(v.message for v in gate.vetoes), *gate.refutations.values()])
    for message in list(shown)[-_VETOES_SHOWN:]:
        result.warnings.append(f"Not automated: {message}.")


def _catalog_never_answered(state: InvestigationState) -> bool:
    return state.catalog.failures > 0 and state.catalog.searches_ok == 0


def _review_reason_of_accepted(
    state: InvestigationState, result: AnalysisResult
) -> HumanReviewReason | None:
    answer = state.last_answer
    if answer is None or not answer.root_cause_assessment.strip():
        return HumanReviewReason.INVESTIGATION_INCONCLUSIVE
    if result.selected_workflow is None:
        gate = state.selection_gate
        if gate.vetoes:
            # The decider stood down after the gate refused its selection(s).
            return gate.vetoes[-1].reason
        attempts = state.ledger.attempts
        if state.ledger.exhausted and attempts and not any(a.valid for a in attempts):
            # The model gave up after every validation failed.
            return HumanReviewReason.PARAMETER_VALIDATION_FAILED
        if state.catalog.failures:
            # "Nothing matched" may only mean "nothing could be looked up":
            # a retry once Data Storage answers may find a workflow.
            return HumanReviewReason.DATA_STORAGE_UNAVAILABLE
        if gate.refutations and result.alternative_workflows:
            # It stood down because the candidates' premises were seen not to hold.
            return HumanReviewReason.PRECONDITION_NOT_MET
        return HumanReviewReason.NO_MATCHING_WORKFLOWS
    threshold = state.settings.min_confidence
    if result.selected_workflow.confidence < threshold:
        result.warnings.append(
            f"Selection confidence {result.selected_workflow.confidence:.2f} is below the"
            f" threshold {threshold:.2f}."
        )
        return HumanReviewReason.LOW_CONFIDENCE
    return None


def _result_from_answer(state: InvestigationState, answer: FinalAnswer | None) -> AnalysisResult:
    """The result's common part: identity, records, usage and the answer's analysis."""
    result = AnalysisResult(
        remediation_id=state.incident.remediation_id,
        incident_id=state.incident.incident_id,
        validation_attempts=list(state.ledger.attempts),
        tool_calls=list(state.tools.records()),
        model=state.model,
        language_model_used=state.language_model_used,
        prompt_tokens=state.usage.prompt_tokens,
        completion_tokens=state.usage.completion_tokens,
        llm_turns=state.turns,
    )
    if answer is not None:
        result.analysis_summary = answer.analysis_summary
        result.root_cause_assessment = answer.root_cause_assessment
        result.rca_severity = answer.rca_severity
        result.target_resource = answer.target_resource
        result.context_used = answer.context_used
        result.warnings = list(answer.warnings)
        result.alternative_workflows = _known_alternatives(state, answer, result.warnings)
    failures = state.catalog.failures
    if failures:
        result.warnings.append(
            f"The workflow catalog was unavailable for {failures}"
            " request(s) during the investigation."
        )
    return result


def _known_alternatives(
    state: InvestigationState, answer: FinalAnswer, warnings: list[str]
) -> list[AlternativeWorkflow]:
    """The model's alternatives that the catalog actually returned, without duplicates."""
    selected = answer.selected.workflow_id if answer.selected else None
    kept: list[AlternativeWorkflow] = []
    dropped: list[str] = []
    for alt in answer.alternatives:
        if alt.workflow_id == selected or any(k.workflow_id == alt.workflow_id for k in kept):
            continue
        if alt.workflow_id in state.catalog.returned_workflows:
            kept.append(alt)
        else:
            dropped.append(redact(alt.workflow_id[:128]))  # model text, shown in the response
    if dropped:
        warnings.append(
            "Ignored alternative workflow(s) the catalog did not return: "
            + ", ".join(repr(d) for d in dropped)
            + "."
        )
    return kept


def _keep_candidate(
    state: InvestigationState, result: AnalysisResult, candidate: AlternativeWorkflow
) -> None:
    """A rejected selection stays visible to humans as an alternative (if it is real)."""
    if candidate.workflow_id not in state.catalog.returned_workflows:
        return
    result.alternative_workflows = [
        candidate,
        *(a for a in result.alternative_workflows if a.workflow_id != candidate.workflow_id),
    ]


def _hits_as_alternatives(state: InvestigationState) -> list[AlternativeWorkflow]:
    """Catalog matches seen so far, best first: all a partial result can offer."""
    validated = {a.workflow_id for a in state.ledger.attempts if a.valid}
    hits = sorted(
        state.catalog.returned_workflows.values(),
        key=lambda h: (h.workflow_id not in validated, -h.confidence),
    )
    return [
        AlternativeWorkflow(
            hit.workflow_id,
            hit.confidence,
            "catalog match; parameters validated"
            if hit.workflow_id in validated
            else "catalog match",
        )
        for hit in hits[:_PARTIAL_ALTERNATIVES]
    ]


def _lower_confidence(result: AnalysisResult) -> None:
    result.warnings.append(
        "Workflow context was unavailable: no workflow could be checked against the"
        " catalog, and confidences were lowered."
    )
    result.alternative_workflows = [
        AlternativeWorkflow(
            a.workflow_id, round(a.confidence * DEGRADED_CONFIDENCE_FACTOR, 4), a.rationale
        )
        for a in result.alternative_workflows
    ]
    s = result.selected_workflow
    if s is not None:
        result.selected_workflow = replace(
            s, confidence=round(s.confidence * DEGRADED_CONFIDENCE_FACTOR, 4)
        )


def _with_review_reason(result: AnalysisResult, reason: HumanReviewReason | None) -> AnalysisResult:
    result.needs_human_review = reason is not None
    result.human_review_reason = reason
    return result


def confine_target(result: AnalysisResult, caller: Caller) -> None:
    """A target in a namespace the caller may not read is not the caller's to remediate,
    nor to have kept under that namespace: the result drops it (the decision is kept
    under the incident's own target) and needs review, the warning naming it."""
    target = result.target_resource
    if target is None or caller.reads(target.namespace):
        return
    named = redact(f"{target.kind}/{target.name}"[:128])
    result.warnings.append(
        f"The answer's target {named!r} is in namespace {redact(target.namespace[:64])!r},"
        f" outside the one this caller may investigate ({caller.namespace!r}): it was"
        " dropped and the decision needs review."
    )
    result.target_resource = None
    result.needs_human_review = True
    if result.human_review_reason is None:
        result.human_review_reason = HumanReviewReason.PRECONDITION_NOT_MET
