"""The observer port: what an investigation tells the outside world about itself.

The core calls these hooks; `hapi_grpc.observability` implements them with
metrics and tracing spans by overriding them. The core never imports
observability, and an engine built without an observer uses `NO_OBSERVER`,
which does nothing.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass

from hapi_grpc.domain.result import LlmTurn, ToolCallRecord, ValidationAttempt

__all__ = ["NO_OBSERVER", "InvestigationFinished", "InvestigationObserver"]


@dataclass(frozen=True)
class InvestigationFinished:
    outcome: str  # "selected" | "human_review" | "cancelled" | "error"
    review_reason: str  # HumanReviewReason in lower case, or "none"
    duration_seconds: float
    searched_catalog: bool


_NULL = contextlib.nullcontext(None)  # reusable: it holds no state


class InvestigationObserver:
    """The hooks, each doing nothing here; an implementation overrides what it observes."""

    def investigation_finished(self, finished: InvestigationFinished) -> None:
        pass

    def llm_turn(self, turn: LlmTurn) -> None:
        pass

    def tool_call_span(self, tool: str) -> AbstractContextManager[object]:
        """Entered around the execution of one (non-repeated) tool call."""
        return _NULL

    def tool_call_finished(self, tool: str, toolset: str, record: ToolCallRecord) -> None:
        """`tool` is the tool's name, or "unknown" for a name no toolset offers."""

    def validation_attempt(self, attempt: ValidationAttempt) -> None:
        pass


NO_OBSERVER = InvestigationObserver()
