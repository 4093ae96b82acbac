"""Metrics and tracing spans for investigations: the core's observer port, implemented.

`app.py` hands a `MetricsObserver` to the engine; the core itself never
imports this package.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.observer import InvestigationFinished
from hapi_grpc.domain.result import LlmTurn, ToolCallRecord, ToolCallStatus, ValidationAttempt
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

__all__ = ["MetricsObserver"]

_OK = (ToolCallStatus.SUCCESS, ToolCallStatus.REPEATED)


class MetricsObserver:
    """Counts investigations, tool calls and validation attempts; spans each tool call."""

    def investigation_started(self, incident: Incident) -> None:
        pass

    def investigation_finished(self, finished: InvestigationFinished) -> None:
        metrics.INVESTIGATIONS.labels(
            outcome=finished.outcome, review_reason=finished.review_reason
        ).inc()
        metrics.INVESTIGATION_DURATION.observe(finished.duration_seconds)
        if finished.searched_catalog:
            metrics.INVESTIGATIONS_USING_CATALOG.inc()
        metrics.refresh_rates()

    def llm_turn(self, turn: LlmTurn) -> None:
        pass  # model requests are counted by the LLM adapters

    def tool_call_span(self, tool: str) -> AbstractContextManager[object]:
        return span(f"tool.{tool}")

    def tool_call_finished(self, tool: str, toolset: str, record: ToolCallRecord) -> None:
        status = record.status.value.lower()
        metrics.TOOL_CALLS.labels(tool=tool, status=status).inc()
        metrics.TOOL_CALL_DURATION.labels(tool=tool).observe(record.duration_seconds)
        if record.status not in _OK:
            metrics.TOOL_CALL_ERRORS.labels(tool=tool).inc()
        toolset = toolset or "none"
        metrics.TOOLSET_CALLS.labels(toolset=toolset, tool=tool, status=status).inc()
        metrics.TOOLSET_CALL_DURATION.labels(toolset=toolset, tool=tool).observe(
            record.duration_seconds
        )
        if record.status not in _OK:
            metrics.TOOLSET_CALL_ERRORS.labels(toolset=toolset, tool=tool).inc()

    def validation_attempt(self, attempt: ValidationAttempt) -> None:
        metrics.VALIDATION_ATTEMPTS.labels(
            source=attempt.source.value.lower(), result="valid" if attempt.valid else "invalid"
        ).inc()
