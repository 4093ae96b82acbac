"""The investigation engine: `AnalyzeIncident` from incident to checked result.

One investigation is a bounded conversation. The model reads the incident's
facts (`prompt.py`), decides when to call the two catalog tools (`tools.py`)
and ends with the ADR-038 JSON answer (`answer.py`), which is checked
against this investigation's search results and the shared parameter
validator before anything leaves the service. A failed check goes back to
the model with exactly what is wrong; tool validations and final-answer
checks share one budget of attempts.

Bounds: LLM turns, tool calls, a per-tool timeout and a wall-clock budget
(the caller's deadline, or `default_budget`, minus a margin to answer). A
bound that is hit, or an unavailable model, ends the investigation with the
best partial result and a human-review reason, not an exception.
Cancellation (client gone, deadline) propagates at once and aborts the
in-flight model or catalog request.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.domain.answer import AnswerFormatError, FinalAnswer, parse_final_answer
from hapi_grpc.domain.catalog import TOP_K_MAX, SearchHit, WorkflowCatalog
from hapi_grpc.domain.deadline import Budget, budget_scope, current_budget
from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    CatalogUnavailableError,
    InvalidRequestError,
    LLMResponseError,
    LLMUnavailableError,
    WorkflowNotFoundError,
)
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.llm import (
    ChatMessage,
    LLMProvider,
    LLMResponse,
    TokenUsage,
    ToolDefinition,
)
from hapi_grpc.domain.prompt import build_messages
from hapi_grpc.domain.result import (
    AlternativeWorkflow,
    AnalysisEvent,
    AnalysisResult,
    HumanReviewReason,
    LlmTurn,
    SelectedWorkflow,
    ValidationSource,
)
from hapi_grpc.domain.tools import (
    TOOL_DEFINITIONS,
    SearchContext,
    ToolSession,
    ValidationLedger,
    with_notice,
)
from hapi_grpc.domain.workflow_validation import validate_workflow_parameters
from hapi_grpc.observability import metrics

__all__ = ["EngineSettings", "EventSink", "InvestigationEngine"]

logger = logging.getLogger("hapi_grpc.domain.engine")

EventSink = Callable[[AnalysisEvent], Awaitable[None]]

# Confidences reported while the catalog was unavailable are scaled by this:
# nothing the model said about workflows could be checked.
DEGRADED_CONFIDENCE_FACTOR = 0.5
# The answer margin never takes more than this share of a short deadline, so
# a caller with a tight deadline still gets an investigation.
_MAX_MARGIN_SHARE = 0.25
_PARTIAL_ALTERNATIVES = 3
_LAST_TURN_NOTICE = "Last turn: do not call tools; reply now with the final JSON answer."


@dataclass(frozen=True)
class EngineSettings:
    """Bounds and thresholds of an investigation.

    The wall-clock budget is the caller's deadline (or `default_budget` when
    there is none) minus `answer_margin`; the margin never takes more than a
    quarter of what is left, so a short deadline still leaves time to work.
    """

    max_tool_calls: int = 10
    max_llm_turns: int = 12
    tool_timeout: float = 10.0
    answer_margin: float = 1.0
    default_budget: float = 300.0  # when the caller set no deadline
    min_confidence: float = 0.7
    max_validation_attempts: int = 3
    search_top_k_max: int = TOP_K_MAX

    def __post_init__(self) -> None:
        if self.max_tool_calls < 0 or self.max_llm_turns < 1 or self.max_validation_attempts < 1:
            raise ValueError("max_llm_turns and max_validation_attempts must be >= 1")
        if self.tool_timeout <= 0 or self.default_budget <= 0 or self.answer_margin < 0:
            raise ValueError("timeouts and budgets must be positive")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError("min_confidence must be in [0, 1]")
        if not 1 <= self.search_top_k_max <= TOP_K_MAX:
            raise ValueError(f"search_top_k_max must be in [1, {TOP_K_MAX}]")


class InvestigationEngine:
    """Runs investigations; safe to share between concurrent calls (no per-call state)."""

    def __init__(
        self,
        catalog: WorkflowCatalog,
        llm: LLMProvider,
        settings: EngineSettings = EngineSettings(),
    ) -> None:
        self._catalog = catalog
        self._llm = llm
        self._settings = settings

    @property
    def settings(self) -> EngineSettings:
        return self._settings

    async def investigate(
        self, incident: Incident, *, on_event: EventSink | None = None
    ) -> AnalysisResult:
        """Investigate `incident`; progress goes to `on_event`, the result is returned."""
        started = time.perf_counter()
        budget = self._budget()
        run = _Investigation(self._catalog, self._llm, self._settings, incident, budget, on_event)
        outcome, reason = "error", "none"
        try:
            with budget_scope(budget):
                result = await run.execute()
            result.duration_seconds = time.perf_counter() - started
            reason = (
                result.human_review_reason.value.lower() if result.human_review_reason else "none"
            )
            outcome = (
                "selected"
                if result.selected_workflow is not None and not result.needs_human_review
                else "human_review"
            )
            logger.info(
                "investigation finished outcome=%s review_reason=%s turns=%d tool_calls=%d"
                " validation_attempts=%d duration=%.3fs",
                outcome,
                reason,
                result.llm_turns,
                len(result.tool_calls),
                len(result.validation_attempts),
                result.duration_seconds,
            )
            return result
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            metrics.INVESTIGATIONS.labels(outcome=outcome, review_reason=reason).inc()
            metrics.INVESTIGATION_DURATION.observe(time.perf_counter() - started)
            if run.tools.searched:
                metrics.INVESTIGATIONS_USING_CATALOG.inc()
            metrics.refresh_rates()

    def _budget(self) -> Budget:
        outer = current_budget()
        if outer is None or math.isinf(outer.expires_at):
            outer = Budget.from_timeout(self._settings.default_budget)
        margin = min(self._settings.answer_margin, max(outer.remaining(), 0.0) * _MAX_MARGIN_SHARE)
        return outer.shrink(margin)


@dataclass
class _Verdict:
    """What the final-answer check decided."""

    answer: FinalAnswer | None
    accepted: bool = False
    selection: SelectedWorkflow | None = None
    reason: HumanReviewReason | None = None  # why it failed
    feedback: str = ""  # what to tell the model when it may correct itself
    terminal: bool = False  # no correction possible: end the investigation
    candidate: AlternativeWorkflow | None = None  # rejected selection, kept for humans


@dataclass
class _Stop:
    reason: HumanReviewReason
    detail: str


@dataclass
class _Investigation:
    catalog: WorkflowCatalog
    llm: LLMProvider
    settings: EngineSettings
    incident: Incident
    budget: Budget
    on_event: EventSink | None
    ledger: ValidationLedger = field(init=False)
    tools: ToolSession = field(init=False)
    usage: TokenUsage = field(default_factory=TokenUsage)
    turns: int = 0
    model: str = ""
    last_answer: FinalAnswer | None = None
    last_candidate: AlternativeWorkflow | None = None

    def __post_init__(self) -> None:
        self.ledger = ValidationLedger(self.settings.max_validation_attempts)
        self.tools = ToolSession(
            self.catalog,
            SearchContext.from_incident(self.incident),
            self.ledger,
            self.budget,
            max_tool_calls=self.settings.max_tool_calls,
            tool_timeout=self.settings.tool_timeout,
            top_k_max=self.settings.search_top_k_max,
        )
        self.model = self.llm.model or self.llm.name

    async def emit(self, event: AnalysisEvent) -> None:
        if self.on_event is not None:
            await self.on_event(event)

    # --- the loop -----------------------------------------------------------------

    async def execute(self) -> AnalysisResult:
        messages = build_messages(self.incident, max_attempts=self.settings.max_validation_attempts)
        tool_defs = list(TOOL_DEFINITIONS)
        max_turns = self.settings.max_llm_turns
        for turn in range(1, max_turns + 1):
            response_or_stop = await self._complete(messages, tool_defs)
            if isinstance(response_or_stop, _Stop):
                return self._partial(response_or_stop)
            response = response_or_stop
            await self._record_turn(turn, response)
            last_turn_next = turn + 1 == max_turns
            if response.tool_calls:
                messages.append(
                    ChatMessage("assistant", response.content, tool_calls=response.tool_calls)
                )
                for index, call in enumerate(response.tool_calls):
                    record, attempt = await self.tools.run(call)
                    await self.emit(record)
                    if attempt is not None:
                        await self.emit(attempt)
                    content = record.result
                    if last_turn_next and index == len(response.tool_calls) - 1:
                        content = with_notice(content, _LAST_TURN_NOTICE)
                    messages.append(
                        ChatMessage("tool", content, tool_call_id=call.id, name=call.name)
                    )
                continue
            messages.append(ChatMessage("assistant", response.content))
            verdict = await self._check(response.content)
            if verdict.accepted or verdict.terminal:
                return self._finish(verdict)
            feedback = verdict.feedback
            if last_turn_next:
                feedback += " This is your last turn."
            messages.append(ChatMessage("user", feedback))
        return self._partial(
            _Stop(
                HumanReviewReason.BUDGET_EXHAUSTED,
                f"the model did not give an accepted answer within {max_turns} turns",
            )
        )

    async def _complete(
        self, messages: list[ChatMessage], tool_defs: list[ToolDefinition]
    ) -> LLMResponse | _Stop:
        remaining = self.budget.remaining()
        if remaining <= 0:
            return _Stop(HumanReviewReason.BUDGET_EXHAUSTED, "the time budget ran out")
        try:
            # The provider clips its own timeouts to the budget; this also
            # bounds a provider that does not.
            async with asyncio.timeout(remaining):
                return await self.llm.complete(messages, tool_defs)
        except TimeoutError:
            if self.budget.expired:
                return _Stop(HumanReviewReason.BUDGET_EXHAUSTED, "the time budget ran out")
            return _Stop(HumanReviewReason.LLM_UNAVAILABLE, "the language model timed out")
        except BudgetExhaustedError:
            return _Stop(HumanReviewReason.BUDGET_EXHAUSTED, "the time budget ran out")
        except LLMUnavailableError as exc:
            logger.warning("language model unavailable: %s", exc.message)
            return _Stop(HumanReviewReason.LLM_UNAVAILABLE, "the language model is unavailable")
        except LLMResponseError as exc:
            logger.warning("language model answered with an invalid completion: %s", exc.message)
            return _Stop(
                HumanReviewReason.LLM_UNAVAILABLE,
                "the language model returned an invalid completion",
            )

    async def _record_turn(self, turn: int, response: LLMResponse) -> None:
        self.turns = turn
        self.usage = self.usage + response.usage
        if response.model:
            self.model = response.model
        # The original text is kept for debugging only; it is never executed.
        logger.debug("model turn %d content=%r", turn, response.content[:4000])
        await self.emit(
            LlmTurn(
                turn=turn,
                content=response.content,
                tool_calls=tuple(call.name for call in response.tool_calls),
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
            )
        )

    # --- the final-answer check -----------------------------------------------------

    async def _check(self, text: str) -> _Verdict:
        try:
            answer = parse_final_answer(text)
        except AnswerFormatError as exc:
            return self._reject(
                None,
                HumanReviewReason.LLM_OUTPUT_UNPARSEABLE,
                "Your final answer was not accepted: "
                + "; ".join(exc.problems)
                + ". Reply with the corrected JSON object only.",
            )
        self.last_answer = answer
        proposed = answer.selected
        if proposed is None:
            return _Verdict(answer, accepted=True)
        candidate = AlternativeWorkflow(
            proposed.workflow_id, proposed.confidence, proposed.rationale
        )
        self.last_candidate = candidate
        hit = self.tools.seen.get(proposed.workflow_id)
        if hit is None:
            returned = ", ".join(list(self.tools.seen)[:10])
            where = (
                f"Choose one of: {returned}"
                if returned
                else "Call search_workflow_catalog first and choose from its results"
            )
            return self._reject(
                answer,
                HumanReviewReason.WORKFLOW_NOT_FOUND,
                f"selected_workflow.workflow_id {proposed.workflow_id[:128]!r} was not returned"
                f" by search_workflow_catalog in this investigation. {where}, or set"
                " selected_workflow to null. Reply with the corrected JSON object only.",
                candidate,
            )
        if proposed.version and _version(proposed.version) != _version(hit.version):
            return self._reject(
                answer,
                HumanReviewReason.WORKFLOW_NOT_FOUND,
                f"selected_workflow.version {proposed.version[:64]!r} does not match the"
                f" catalog's version {hit.version!r} of {hit.workflow_id!r}. Use"
                f" {hit.version!r}. Reply with the corrected JSON object only.",
                candidate,
            )
        return await self._check_parameters(answer, hit, candidate)

    async def _check_parameters(
        self, answer: FinalAnswer, hit: SearchHit, candidate: AlternativeWorkflow
    ) -> _Verdict:
        proposed = answer.selected
        assert proposed is not None
        confirmed = self.ledger.confirmed(hit.workflow_id, proposed.parameters)
        if confirmed is not None:
            # Exactly what a tool validation already passed: no new attempt.
            return self._accept(answer, hit, confirmed.sanitized)
        if self.ledger.exhausted:
            return _Verdict(
                answer,
                reason=HumanReviewReason.PARAMETER_VALIDATION_FAILED,
                terminal=True,
                candidate=candidate,
            )
        timeout = min(self.settings.tool_timeout, self.budget.remaining())
        try:
            if timeout <= 0:
                raise BudgetExhaustedError("no time left to validate the final answer")
            async with asyncio.timeout(timeout):
                _, outcome = await validate_workflow_parameters(
                    self.catalog, hit.workflow_id, proposed.parameters
                )
        except (TimeoutError, BudgetExhaustedError):
            if self.budget.expired:
                return _Verdict(
                    answer,
                    reason=HumanReviewReason.BUDGET_EXHAUSTED,
                    terminal=True,
                    candidate=candidate,
                )
            return self._catalog_down(answer, candidate)
        except CatalogUnavailableError as exc:
            logger.warning("workflow catalog unavailable for the final check: %s", exc.message)
            return self._catalog_down(answer, candidate)
        except (WorkflowNotFoundError, InvalidRequestError):
            return self._reject(
                answer,
                HumanReviewReason.WORKFLOW_NOT_FOUND,
                f"workflow {hit.workflow_id!r} is no longer in the catalog. Choose another"
                " workflow or set selected_workflow to null. Reply with the corrected JSON"
                " object only.",
                candidate,
            )
        attempt = self.ledger.record(
            hit.workflow_id, proposed.parameters, outcome, ValidationSource.FINAL_ANSWER
        )
        await self.emit(attempt)
        if outcome.valid:
            return self._accept(answer, hit, outcome.sanitized)
        problems = "; ".join(issue.message for issue in outcome.errors[:10])
        return self._reject(
            answer,
            HumanReviewReason.PARAMETER_VALIDATION_FAILED,
            f"selected_workflow.parameters are invalid for {hit.workflow_id!r}: {problems}."
            " Correct them and reply with the corrected JSON object only"
            f" ({self.ledger.remaining} validation attempt(s) left).",
            candidate,
            charged=True,
        )

    def _accept(self, answer: FinalAnswer, hit: SearchHit, parameters: dict[str, Any]) -> _Verdict:
        proposed = answer.selected
        assert proposed is not None
        self.last_candidate = None
        selection = SelectedWorkflow(
            workflow_id=hit.workflow_id,
            version=hit.version,
            confidence=proposed.confidence,
            rationale=proposed.rationale,
            estimated_risk=proposed.estimated_risk,
            parameters=parameters,
        )
        return _Verdict(answer, accepted=True, selection=selection)

    def _reject(
        self,
        answer: FinalAnswer | None,
        reason: HumanReviewReason,
        feedback: str,
        candidate: AlternativeWorkflow | None = None,
        *,
        charged: bool = False,
    ) -> _Verdict:
        """A failed check: the model may correct itself while attempts remain."""
        if not charged:
            self.ledger.charge()
        logger.info("final answer rejected reason=%s", reason.value)
        return _Verdict(
            answer,
            reason=reason,
            feedback=feedback,
            terminal=self.ledger.exhausted,
            candidate=candidate,
        )

    def _catalog_down(self, answer: FinalAnswer, candidate: AlternativeWorkflow) -> _Verdict:
        self.tools.catalog_failures += 1
        return _Verdict(
            answer,
            reason=HumanReviewReason.DATA_STORAGE_UNAVAILABLE,
            terminal=True,
            candidate=candidate,
        )

    # --- results --------------------------------------------------------------------

    def _finish(self, verdict: _Verdict) -> AnalysisResult:
        # A terminal failure to parse keeps the analysis of an earlier answer.
        result = self._base(verdict.answer or self.last_answer)
        reason = None if verdict.accepted else verdict.reason
        if verdict.selection is not None:
            result.selected_workflow = verdict.selection
        candidate = None if verdict.accepted else verdict.candidate or self.last_candidate
        if candidate is not None:
            self._keep_candidate(result, candidate)
            why = _REJECTION_TEXT.get(reason) if reason is not None else None
            result.warnings.append(
                f"Workflow {candidate.workflow_id[:128]!r} was proposed but not selected:"
                f" {why or 'it could not be checked'}."
            )
        degraded = self.tools.catalog_failures > 0 and self.tools.searches_ok == 0
        if degraded or reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE:
            reason = HumanReviewReason.DATA_STORAGE_UNAVAILABLE
            self._lower_confidence(result)
        if reason is None:
            reason = self._judgement(result)
        return self._flag(result, reason)

    def _judgement(self, result: AnalysisResult) -> HumanReviewReason | None:
        """Review reasons of an accepted answer."""
        answer = self.last_answer
        if answer is None or not answer.root_cause_assessment.strip():
            return HumanReviewReason.INVESTIGATION_INCONCLUSIVE
        if result.selected_workflow is None:
            attempts = self.ledger.attempts
            if self.ledger.exhausted and attempts and not any(a.valid for a in attempts):
                # The model gave up after every validation failed.
                return HumanReviewReason.PARAMETER_VALIDATION_FAILED
            return HumanReviewReason.NO_MATCHING_WORKFLOWS
        if result.selected_workflow.confidence < self.settings.min_confidence:
            result.warnings.append(
                f"Selection confidence {result.selected_workflow.confidence:.2f} is below the"
                f" threshold {self.settings.min_confidence:.2f}."
            )
            return HumanReviewReason.LOW_CONFIDENCE
        return None

    def _partial(self, stop: _Stop) -> AnalysisResult:
        """The best result available when a bound or the model ended the conversation."""
        result = self._base(self.last_answer)
        if self.last_answer is None:
            result.analysis_summary = f"Investigation incomplete: {stop.detail}."
            result.alternative_workflows = self._hits_as_alternatives()
        if self.last_candidate is not None:
            self._keep_candidate(result, self.last_candidate)
        result.warnings.append(f"Investigation incomplete: {stop.detail}.")
        if self.tools.catalog_failures > 0 and self.tools.searches_ok == 0:
            self._lower_confidence(result)
        return self._flag(result, stop.reason)

    def _base(self, answer: FinalAnswer | None) -> AnalysisResult:
        result = AnalysisResult(
            remediation_id=self.incident.remediation_id,
            incident_id=self.incident.incident_id,
            validation_attempts=list(self.ledger.attempts),
            tool_calls=list(self.tools.records),
            model=self.model,
            language_model_used=bool(self.llm.uses_language_model),
            prompt_tokens=self.usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens,
            llm_turns=self.turns,
        )
        if answer is not None:
            result.analysis_summary = answer.analysis_summary
            result.root_cause_assessment = answer.root_cause_assessment
            result.rca_severity = answer.rca_severity
            result.target_resource = answer.target_resource
            result.context_used = answer.context_used
            result.warnings = list(answer.warnings)
            result.alternative_workflows = self._known_alternatives(answer, result.warnings)
        if self.tools.catalog_failures:
            result.warnings.append(
                f"The workflow catalog was unavailable for {self.tools.catalog_failures}"
                " request(s) during the investigation."
            )
        return result

    def _known_alternatives(
        self, answer: FinalAnswer, warnings: list[str]
    ) -> list[AlternativeWorkflow]:
        """The model's alternatives that the catalog actually returned, without duplicates."""
        selected = answer.selected.workflow_id if answer.selected else None
        kept: list[AlternativeWorkflow] = []
        dropped: list[str] = []
        for alt in answer.alternatives:
            if alt.workflow_id == selected or any(k.workflow_id == alt.workflow_id for k in kept):
                continue
            if alt.workflow_id in self.tools.seen:
                kept.append(alt)
            else:
                dropped.append(alt.workflow_id[:128])
        if dropped:
            warnings.append(
                "Ignored alternative workflow(s) the catalog did not return: "
                + ", ".join(repr(d) for d in dropped)
                + "."
            )
        return kept

    def _keep_candidate(self, result: AnalysisResult, candidate: AlternativeWorkflow) -> None:
        """A rejected selection stays visible to humans as an alternative (if it is real)."""
        if candidate.workflow_id not in self.tools.seen:
            return
        result.alternative_workflows = [
            candidate,
            *(a for a in result.alternative_workflows if a.workflow_id != candidate.workflow_id),
        ]

    def _hits_as_alternatives(self) -> list[AlternativeWorkflow]:
        """Catalog matches seen so far, best first: all a partial result can offer."""
        validated = {a.workflow_id for a in self.ledger.attempts if a.valid}
        hits = sorted(
            self.tools.seen.values(),
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

    def _lower_confidence(self, result: AnalysisResult) -> None:
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
        if result.selected_workflow is not None:
            s = result.selected_workflow
            result.selected_workflow = SelectedWorkflow(
                s.workflow_id,
                s.version,
                round(s.confidence * DEGRADED_CONFIDENCE_FACTOR, 4),
                s.rationale,
                s.estimated_risk,
                s.parameters,
            )

    @staticmethod
    def _flag(result: AnalysisResult, reason: HumanReviewReason | None) -> AnalysisResult:
        result.needs_human_review = reason is not None
        result.human_review_reason = reason
        return result


_REJECTION_TEXT = {
    HumanReviewReason.PARAMETER_VALIDATION_FAILED: "its parameters did not pass validation",
    HumanReviewReason.WORKFLOW_NOT_FOUND: "it does not match a workflow the catalog returned",
    HumanReviewReason.DATA_STORAGE_UNAVAILABLE: "the catalog was unavailable to validate it",
    HumanReviewReason.BUDGET_EXHAUSTED: "no time was left to validate it",
    HumanReviewReason.LLM_OUTPUT_UNPARSEABLE: "the final answer could not be parsed",
}


def _version(text: str) -> str:
    """Versions compare without a leading 'v' and trailing '.0' parts ('v1.0' == '1.0.0')."""
    value = text.strip().lower().removeprefix("v")
    while value.endswith(".0") and value.count(".") > 0:
        value = value[:-2]
    return value
