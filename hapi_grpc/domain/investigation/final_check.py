"""The final-answer check: nothing leaves the service unchecked.

Design notes: docs/internals.md (`domain/investigation/final_check.py`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.answer import AnswerFormatError, FinalAnswer, parse_final_answer
from hapi_grpc.domain.catalog import Declarations, SearchHit
from hapi_grpc.domain.investigation.state import InvestigationState
from hapi_grpc.domain.result import (
    AlternativeWorkflow,
    HumanReviewReason,
    SelectedWorkflow,
    ValidationSource,
)
from hapi_grpc.domain.toolsets.workflow_catalog.session import CatalogFailure, FailureKind
from hapi_grpc.domain.toolsets.workflow_catalog.tools import SEARCH_TOOL
from hapi_grpc.domain.workflow_validation import validate_workflow_parameters

__all__ = ["Verdict", "check_final_answer", "normalised_version"]

logger = logging.getLogger(__name__)

_CORRECT = "Reply with the corrected JSON object only."


@dataclass(slots=True)
class Verdict:
    """What the final-answer check decided."""

    answer: FinalAnswer | None
    accepted: bool = False
    selection: SelectedWorkflow | None = None
    reason: HumanReviewReason | None = None  # why it failed
    feedback: str = ""  # what to tell the model when it may correct itself
    terminal: bool = False  # no correction possible: end the investigation
    candidate: AlternativeWorkflow | None = None  # rejected selection, kept for humans


def normalised_version(text: str) -> str:
    """Versions compare without a leading 'v' and trailing '.0' parts ('v1.0' == '1.0.0')."""
    value = text.strip().lower().removeprefix("v")
    while value.endswith(".0") and value.count(".") > 0:
        value = value[:-2]
    return value


async def check_final_answer(state: InvestigationState, text: str) -> Verdict:
    """Check the model's final answer `text` (see module docstring)."""
    try:
        answer = parse_final_answer(text)
    except AnswerFormatError as exc:
        return _format_rejected(state, exc)
    state.last_answer = answer
    proposed = answer.selected
    if proposed is None:
        return Verdict(answer, accepted=True)
    candidate = AlternativeWorkflow(proposed.workflow_id, proposed.confidence, proposed.rationale)
    state.last_candidate = candidate
    returned = state.catalog.returned_workflows
    hit = returned.get(proposed.workflow_id)
    if hit is None:
        listed = ", ".join(list(returned)[:10])
        where = (
            f"Choose one of: {listed}"
            if listed
            else f"Call {SEARCH_TOOL} first and choose from its results"
        )
        return _reject(
            state,
            answer,
            HumanReviewReason.WORKFLOW_NOT_FOUND,
            f"selected_workflow.workflow_id {proposed.workflow_id[:128]!r} was not returned"
            f" by {SEARCH_TOOL} in this investigation. {where}, or set"
            f" selected_workflow to null. {_CORRECT}",
            candidate,
        )
    if proposed.version and normalised_version(proposed.version) != normalised_version(hit.version):
        return _reject(
            state,
            answer,
            HumanReviewReason.WORKFLOW_NOT_FOUND,
            f"selected_workflow.version {proposed.version[:64]!r} does not match the"
            f" catalog's version {hit.version!r} of {hit.workflow_id!r}. Use"
            f" {hit.version!r}. {_CORRECT}",
            candidate,
        )
    return await _check_parameters(state, answer, hit, candidate)


async def _check_parameters(
    state: InvestigationState, answer: FinalAnswer, hit: SearchHit, candidate: AlternativeWorkflow
) -> Verdict:
    proposed = answer.selected
    assert proposed is not None
    ledger = state.ledger
    confirmed = ledger.confirmed(hit.workflow_id, proposed.parameters)
    if confirmed is not None:
        # Exactly what a tool validation already passed: no new attempt.
        declared = ledger.declarations(hit.workflow_id)
        return await _gated(state, answer, hit, confirmed.sanitized, candidate, declared, False)
    if ledger.exhausted:
        return Verdict(
            answer,
            reason=HumanReviewReason.PARAMETER_VALIDATION_FAILED,
            terminal=True,
            candidate=candidate,
        )
    try:
        schema, outcome = await state.catalog.call(
            validate_workflow_parameters(
                state.catalog.catalog, hit.workflow_id, proposed.parameters
            ),
            state.settings.tool_timeout,
        )
    except CatalogFailure as failure:
        return _catalog_failed(state, answer, hit, candidate, failure)
    attempt = ledger.record(
        hit.workflow_id, proposed.parameters, outcome, ValidationSource.FINAL_ANSWER, schema
    )
    await state.progress.attempt(attempt)
    if outcome.valid:
        return await _gated(state, answer, hit, outcome.sanitized, candidate, schema, True)
    problems = "; ".join(issue.message for issue in outcome.errors[:10])
    return _reject(
        state,
        answer,
        HumanReviewReason.PARAMETER_VALIDATION_FAILED,
        f"selected_workflow.parameters are invalid for {hit.workflow_id!r}: {problems}."
        " Correct them and reply with the corrected JSON object only"
        f" ({ledger.remaining} validation attempt(s) left).",
        candidate,
        charged=True,
    )


async def _gated(
    state: InvestigationState,
    answer: FinalAnswer,
    hit: SearchHit,
    parameters: dict[str, Any],
    candidate: AlternativeWorkflow,
    declared: Declarations | None,
    charged: bool,
) -> Verdict:
    """Valid parameters: automated only when the selection gate lets them through.

    This is the one place where a selection is vetoed after validation: the
    workflow's declared preconditions and invariants, then every extra
    `SelectionCheck` the engine was given (see `domain.selection_gate`).
    `declared` is the schema the parameters were validated against (fetched when
    not kept); `charged`: a validation attempt was just recorded for them.
    """
    if declared is None:
        try:
            declared = await state.catalog.call(
                state.catalog.catalog.get_schema(hit.workflow_id), state.settings.tool_timeout
            )
        except CatalogFailure as failure:
            return _catalog_failed(state, answer, hit, candidate, failure)
    assert declared is not None
    veto = await state.selection_gate.check(hit.workflow_id, declared, parameters, hit)
    if veto is None:
        return _accept(state, answer, hit, parameters)
    return _reject(
        state,
        answer,
        veto.reason,
        f"selected_workflow {hit.workflow_id!r} cannot be automated: {veto.message}."
        " Choose another workflow whose premise the evidence shows, or set"
        f" selected_workflow to null for human review. {_CORRECT}",
        candidate,
        charged=charged,
    )


def _catalog_failed(
    state: InvestigationState,
    answer: FinalAnswer,
    hit: SearchHit,
    candidate: AlternativeWorkflow,
    failure: CatalogFailure,
) -> Verdict:
    if failure.kind is FailureKind.NO_TIME:
        reason = HumanReviewReason.BUDGET_EXHAUSTED
    elif failure.kind in (FailureKind.NOT_FOUND, FailureKind.INVALID):
        return _reject(
            state,
            answer,
            HumanReviewReason.WORKFLOW_NOT_FOUND,
            f"workflow {hit.workflow_id!r} is no longer in the catalog. Choose another"
            f" workflow or set selected_workflow to null. {_CORRECT}",
            candidate,
        )
    else:
        reason = HumanReviewReason.DATA_STORAGE_UNAVAILABLE
    return Verdict(answer, reason=reason, terminal=True, candidate=candidate)


def _accept(
    state: InvestigationState, answer: FinalAnswer, hit: SearchHit, parameters: dict[str, Any]
) -> Verdict:
    proposed = answer.selected
    assert proposed is not None
    state.last_candidate = None
    selection = SelectedWorkflow.accepted(proposed, hit.version, parameters, hit.action_type)
    return Verdict(answer, accepted=True, selection=selection)


def _format_rejected(state: InvestigationState, exc: AnswerFormatError) -> Verdict:
    """An answer that is not the JSON contract: sent back while format repairs remain."""
    state.format_failures += 1
    left = state.settings.max_format_repairs - state.format_failures
    logger.info("final answer unparseable failures=%d", state.format_failures)
    return Verdict(
        None,
        reason=HumanReviewReason.LLM_OUTPUT_UNPARSEABLE,
        feedback="Your final answer was not accepted: "
        + "; ".join(exc.problems)
        + f". {_CORRECT} Format corrections left after this one: {max(left, 0)}.",
        terminal=left < 0,
    )


def _reject(
    state: InvestigationState,
    answer: FinalAnswer | None,
    reason: HumanReviewReason,
    feedback: str,
    candidate: AlternativeWorkflow | None = None,
    *,
    charged: bool = False,
) -> Verdict:
    """A failed check: the model may correct itself while attempts remain."""
    if not charged:
        state.ledger.charge()
    logger.info("final answer rejected reason=%s", reason.value)
    return Verdict(
        answer,
        reason=reason,
        feedback=feedback,
        terminal=state.ledger.exhausted,
        candidate=candidate,
    )
