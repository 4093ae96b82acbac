"""What one investigation knows while it runs, and how it reports progress.

`Progress` is the single exit for events: each goes to the caller's event
sink and to the observer, already redacted where it carries model text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from hapi_grpc.domain.answer import FinalAnswer
from hapi_grpc.domain.deadline import Budget
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.context_window import ContextWindow
from hapi_grpc.domain.investigation.observer import InvestigationObserver
from hapi_grpc.domain.investigation.settings import EngineSettings
from hapi_grpc.domain.llm import TokenUsage
from hapi_grpc.domain.result import (
    AlternativeWorkflow,
    AnalysisEvent,
    LlmTurn,
    ToolCallRecord,
    ValidationAttempt,
)
from hapi_grpc.domain.selection_gate import SelectionGate
from hapi_grpc.domain.toolsets.dispatcher import ToolDispatcher
from hapi_grpc.domain.toolsets.workflow_catalog.ledger import ValidationLedger
from hapi_grpc.domain.toolsets.workflow_catalog.session import CatalogSession

__all__ = ["EventSink", "InvestigationState", "Progress"]

EventSink = Callable[[AnalysisEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Progress:
    sink: EventSink | None
    observer: InvestigationObserver

    async def turn(self, turn: LlmTurn) -> None:
        self.observer.llm_turn(turn)
        await self._emit(turn)

    async def tool_call(self, record: ToolCallRecord) -> None:
        await self._emit(record)  # the dispatcher already told the observer

    async def attempt(self, attempt: ValidationAttempt) -> None:
        self.observer.validation_attempt(attempt)
        await self._emit(attempt)

    async def _emit(self, event: AnalysisEvent) -> None:
        if self.sink is not None:
            await self.sink(event)


@dataclass(slots=True)
class InvestigationState:
    incident: Incident
    settings: EngineSettings
    budget: Budget
    ledger: ValidationLedger
    catalog: CatalogSession
    tools: ToolDispatcher
    progress: Progress
    window: ContextWindow
    # What the tools read and the checks a selection passes before automation.
    selection_gate: SelectionGate
    model: str
    language_model_used: bool
    usage: TokenUsage = field(default_factory=TokenUsage)
    turns: int = 0
    last_answer: FinalAnswer | None = None
    # The latest selection that was proposed and not accepted, kept for humans.
    last_candidate: AlternativeWorkflow | None = None
    # Final answers that did not parse (their own budget, not the ledger's).
    format_failures: int = 0
    overflow_recoveries: int = 0  # trim-and-resend rounds after a context overflow
