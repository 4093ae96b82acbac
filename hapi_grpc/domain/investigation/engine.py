"""`InvestigationEngine`: runs `AnalyzeIncident` investigations, bounded and observable.

Design notes: docs/internals.md (`domain/investigation/engine.py`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from hapi_grpc.domain.catalog import SearchHit, WorkflowCatalog
from hapi_grpc.domain.deadline import Budget, budget_scope, current_budget
from hapi_grpc.domain.history import RemediationHistory
from hapi_grpc.domain.history.gate import HistoryCheck, stood_down_because
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.context_window import ContextWindow
from hapi_grpc.domain.investigation.loop import OUT_OF_TIME, converse
from hapi_grpc.domain.investigation.observer import (
    NO_OBSERVER,
    InvestigationFinished,
    InvestigationObserver,
)
from hapi_grpc.domain.investigation.outcome import confine_target, partial_result
from hapi_grpc.domain.investigation.settings import EngineSettings
from hapi_grpc.domain.investigation.state import EventSink, InvestigationState, Progress
from hapi_grpc.domain.llm import DecidesFromRecord, LLMProvider
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.premises import PremiseBook, bundled_book
from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.recovery.exhausted import exhausted_result
from hapi_grpc.domain.recovery.repeats import recovery_check
from hapi_grpc.domain.result import AnalysisResult
from hapi_grpc.domain.selection_gate import SelectionCheck, SelectionGate
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.dispatcher import ToolDispatcher
from hapi_grpc.domain.toolsets.toolset import ToolsetLimits, ToolsetSource
from hapi_grpc.domain.toolsets.workflow_catalog.ledger import ValidationLedger
from hapi_grpc.domain.toolsets.workflow_catalog.session import CatalogSession, SearchContext
from hapi_grpc.domain.toolsets.workflow_catalog.tools import SEARCH_TOOL, workflow_catalog_toolset

if TYPE_CHECKING:  # the policy's CEL library is imported only when a policy is set
    from hapi_grpc.domain.policy.enforce import DecisionPolicy

__all__ = ["EngineSettings", "EventSink", "InvestigationEngine", "ToolsetSource"]

logger = logging.getLogger(__name__)

ANYONE = Caller()  # no caller to bound what the toolsets read (tests, benchmarks, evals)

# The answer margin never takes more than this share of a short deadline, so
# a caller with a tight deadline still gets an investigation.
_MAX_MARGIN_SHARE = 0.25
# The whole conversation is cut this long after its budget ends, should a
# step not keep to the budget itself (and at once after `drain`).
_CUT_GRACE = 0.05


class InvestigationEngine:
    """Runs investigations; safe to share between concurrent calls."""

    def __init__(
        self,
        catalog: WorkflowCatalog,
        llm: LLMProvider,
        settings: EngineSettings = EngineSettings(),
        *,
        observer: InvestigationObserver = NO_OBSERVER,
        toolsets: Sequence[ToolsetSource] = (),
        policy: DecisionPolicy | None = None,
        selection_checks: Sequence[SelectionCheck] = (),
        history: RemediationHistory | None = None,
        premises: PremiseBook | None = None,
    ) -> None:
        """`selection_checks` run after a selection's premise holds; any may veto its
        automation (`domain.selection_gate`); with `history`, the target's remediation
        history is checked too (`domain.history.gate`). `premises`: the packs in force
        (the shipped ones when None); the policy may allow unverified workflows."""
        self._catalog = catalog
        self._premises = premises if premises is not None else bundled_book()
        self._history = history
        self._policy = policy
        self._checks = tuple(selection_checks)
        self._toolsets = tuple(toolsets)
        self._llm = llm
        # Decided once: isinstance against a runtime-checkable Protocol walks the
        # class's members on every call (6 us warm, ~1% of a storm's server CPU).
        self._reader = llm if isinstance(llm, DecidesFromRecord) else None
        self._settings = settings
        self._observer = observer
        self._running: dict[asyncio.Timeout, Budget] = {}  # each running one's cutoff
        self._drain_until: float | None = None  # time.monotonic() value

    @property
    def settings(self) -> EngineSettings:
        return self._settings

    def drain(self, seconds: float) -> int:
        """End every running investigation (and any started later) within `seconds`.

        Each ends with its best partial result (BUDGET_EXHAUSTED). Returns how
        many were running.
        """
        deadline = time.monotonic() + max(seconds, 0.0)
        self._drain_until = min(self._drain_until or math.inf, deadline)
        for cutoff, budget in list(self._running.items()):
            budget.end_within(seconds)
            cutoff.reschedule(budget.expires_at + _CUT_GRACE)
        logger.info("draining investigations running=%d within=%.3fs", len(self._running), seconds)
        return len(self._running)

    async def investigate(
        self,
        incident: Incident,
        *,
        caller: Caller = ANYONE,
        on_event: EventSink | None = None,
        recorder: ReadRecorder = NOT_RECORDED,
    ) -> AnalysisResult:
        """Investigate `incident` for `caller` (its toolsets read what the caller
        may, through `recorder`); progress goes to `on_event`, the result is returned."""
        started = time.perf_counter()
        state = self._new_state(incident, caller, on_event, recorder)
        outcome, reason = "error", "none"
        try:
            if incident.recovery is not None and incident.recovery.exhausted:
                # The controller's attempts are spent: nothing to investigate for.
                result = exhausted_result(incident, state.model, state.language_model_used)
            else:
                with budget_scope(state.budget):
                    result = await self._run(state)
                    await _history_reason(state, result)
            confine_target(result, caller)
            if self._policy is not None:  # the operator's policy, on the caller's deadline
                await self._policy.apply(incident, result, _hit_of(state, result))
            _name_action_types(result, state.catalog.returned_workflows)
            result.warnings.extend(_history_notes(state))
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
            searched = any(r.name == SEARCH_TOOL for r in state.tools.records())
            self._observer.investigation_finished(
                InvestigationFinished(outcome, reason, time.perf_counter() - started, searched)
            )

    async def _run(self, state: InvestigationState) -> AnalysisResult:
        cutoff = asyncio.timeout_at(state.budget.expires_at + _CUT_GRACE)
        self._running[cutoff] = state.budget
        try:
            async with cutoff:
                return await converse(state, self._provider(state))
        except TimeoutError:
            if not cutoff.expired():
                raise
            return partial_result(state, OUT_OF_TIME)
        finally:
            del self._running[cutoff]

    @property
    def llm_name(self) -> str:
        return self._llm.name

    async def close(self) -> None:
        if self._policy is not None:
            await self._policy.close()
        await self._llm.close()

    def _provider(self, state: InvestigationState) -> LLMProvider:
        """The model for this investigation (one that decides from the record gets the
        incident and the record)."""
        if self._reader is not None:
            return self._reader.investigating(state.incident, state.selection_gate.observed)
        return self._llm

    def _new_state(
        self,
        incident: Incident,
        caller: Caller,
        on_event: EventSink | None,
        recorder: ReadRecorder = NOT_RECORDED,
    ) -> InvestigationState:
        settings = self._settings
        budget = self._budget()
        ledger = ValidationLedger(settings.max_validation_attempts)
        session = CatalogSession(
            recorder.reading(self._catalog), SearchContext.from_incident(incident)
        )
        observed = Observed()
        # A recovery never repeats a failed execution: checked before any other.
        # Then the target's history, read by the service itself whatever the model reads.
        own: tuple[SelectionCheck, ...] = (recovery_check,) if incident.recovery else ()
        if self._history is not None:
            # Another tenant's ids are never shown: an authenticated caller sees none.
            own += (HistoryCheck(recorder.reading(self._history), ids_shown=not caller.name),)
        checks = (*own, *self._checks)
        allow = self._policy.allows_unverified if self._policy is not None else None
        gate = SelectionGate(incident, observed, checks, self._premises, allow)
        catalog_tools = workflow_catalog_toolset(
            session,
            ledger,
            ToolsetLimits(max_calls=settings.max_tool_calls, call_timeout=settings.tool_timeout),
            top_k_max=settings.search_top_k_max,
            gate=gate,
        )
        return InvestigationState(
            incident=incident,
            settings=settings,
            budget=budget,
            ledger=ledger,
            catalog=session,
            tools=ToolDispatcher(
                # A toolset with no tools (a tool server never reached) is not offered.
                [
                    catalog_tools,
                    *(t for t in (make(caller, recorder) for make in self._toolsets) if t.tools),
                ],
                self._observer,
                observed=observed,
            ),
            progress=Progress(on_event, self._observer),
            window=ContextWindow(settings.context_tokens, settings.completion_tokens),
            selection_gate=gate,
            model=self._llm.model or self._llm.name,
            language_model_used=bool(self._llm.uses_language_model),
        )

    def _budget(self) -> Budget:
        outer = current_budget()
        if outer is None or math.isinf(outer.expires_at):
            outer = Budget.from_timeout(self._settings.default_budget)
        # A caller's longer deadline does not lengthen an investigation: the
        # shutdown grace of a deployment is sized from this maximum.
        outer = Budget(min(outer.expires_at, time.monotonic() + self._settings.max_budget))
        margin = min(self._settings.answer_margin, max(outer.remaining(), 0.0) * _MAX_MARGIN_SHARE)
        budget = outer.shrink(margin)
        if self._drain_until is not None:
            budget.end_within(self._drain_until - time.monotonic())
        return budget


async def _history_reason(state: InvestigationState, result: AnalysisResult) -> None:
    """A decider that stood down because of the target's history gets its reason
    (not one whose selection the gate refused: that veto is the reason)."""
    gate = state.selection_gate
    if gate.vetoes:
        return
    for check in gate.checks:
        if isinstance(check, HistoryCheck):
            returned = state.catalog.returned_workflows
            veto = await stood_down_because(check, state.incident, gate.observed, result, returned)
            if veto is not None:
                result.human_review_reason = veto.reason
                result.warnings.append(f"Not automated: {veto.message}.")


def _history_notes(state: InvestigationState) -> list[str]:
    """The history check's warnings (history it could not read)."""
    return [
        note
        for check in state.selection_gate.checks
        if isinstance(check, HistoryCheck)
        for note in check.notes
    ]


def _name_action_types(result: AnalysisResult, returned: Mapping[str, SearchHit]) -> None:
    """Every workflow the result names carries the action type its catalog entry declares."""
    result.alternative_workflows = [
        replace(a, action_type=returned[a.workflow_id].action_type)
        if not a.action_type and a.workflow_id in returned
        else a
        for a in result.alternative_workflows
    ]
    s = result.selected_workflow
    if s is not None and not s.action_type and s.workflow_id in returned:
        result.selected_workflow = replace(s, action_type=returned[s.workflow_id].action_type)


def _hit_of(state: InvestigationState, result: AnalysisResult) -> SearchHit | None:
    selected = result.selected_workflow
    return state.catalog.returned_workflows.get(selected.workflow_id) if selected else None
