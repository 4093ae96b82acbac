"""Metrics and tracing spans for investigations: the core's observer port, implemented.

`app.py` hands a `MetricsObserver` to the engine; the core itself never
imports this package.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from hapi_grpc.domain.investigation.observer import InvestigationFinished, InvestigationObserver
from hapi_grpc.domain.result import LlmTurn, ToolCallRecord, ToolCallStatus, ValidationAttempt
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

__all__ = ["MetricsObserver"]

_OK = (ToolCallStatus.SUCCESS, ToolCallStatus.REPEATED)


class MetricsObserver(InvestigationObserver):
    """Counts investigations, tool calls and validation attempts; spans each tool call."""

    def __init__(self) -> None:
        # Labelled children resolved once per label set (all closed sets):
        # `labels()` takes a lock and builds a key on every call.
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *values: str) -> Any:
        key = (id(metric), *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def investigation_finished(self, finished: InvestigationFinished) -> None:
        # Label order as declared in `metrics`.
        self._child(metrics.INVESTIGATIONS, finished.outcome, finished.review_reason).inc()
        metrics.INVESTIGATION_DURATION.observe(finished.duration_seconds)
        if finished.searched_catalog:
            metrics.INVESTIGATIONS_USING_CATALOG.inc()

    def llm_turn(self, turn: LlmTurn) -> None:
        pass  # model requests are counted by the LLM adapters

    def tool_call_span(self, tool: str) -> AbstractContextManager[object]:
        return span(f"tool.{tool}")

    def tool_call_finished(self, tool: str, toolset: str, record: ToolCallRecord) -> None:
        status = record.status.value.lower()
        self._child(metrics.TOOL_CALLS, tool, status).inc()
        self._child(metrics.TOOL_CALL_DURATION, tool).observe(record.duration_seconds)
        if record.status not in _OK:
            self._child(metrics.TOOL_CALL_ERRORS, tool).inc()
        toolset = toolset or "none"
        self._child(metrics.TOOLSET_CALLS, toolset, tool, status).inc()
        self._child(metrics.TOOLSET_CALL_DURATION, toolset, tool).observe(record.duration_seconds)
        if record.status not in _OK:
            self._child(metrics.TOOLSET_CALL_ERRORS, toolset, tool).inc()

    def validation_attempt(self, attempt: ValidationAttempt) -> None:
        result = "valid" if attempt.valid else "invalid"
        self._child(metrics.VALIDATION_ATTEMPTS, attempt.source.value.lower(), result).inc()
