"""Runs the model's tool calls against the toolsets offered in one investigation.

Design notes: docs/internals.md (`domain/toolsets/dispatcher.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.deadline import request_timeout
from hapi_grpc.domain.errors import BudgetExhaustedError
from hapi_grpc.domain.investigation.observer import InvestigationObserver
from hapi_grpc.domain.llm import ToolCall, ToolDefinition
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.result import ToolCallRecord, ToolCallStatus, ValidationAttempt
from hapi_grpc.domain.sensitive import clip, redact, redact_head, redact_mapping
from hapi_grpc.domain.toolsets.jsontext import (
    MAX_ARGUMENT_BYTES,
    canonical_json,
    compact_json,
    one_line,
    parse_arguments,
    with_notice,
)
from hapi_grpc.domain.toolsets.shared_texts import RedactedOutputs, SharedTexts
from hapi_grpc.domain.toolsets.tool import (
    ArgumentsRejected,
    Tool,
    ToolContext,
    ToolResult,
    metric_label,
    refused,
    tool_hint,
    validate_arguments,
)
from hapi_grpc.domain.toolsets.toolset import Toolset

__all__ = ["UNKNOWN_TOOL_LABEL", "ToolDispatcher"]

logger = logging.getLogger(__name__)

UNKNOWN_TOOL_LABEL = "unknown"
REPEAT_NOTICE = "Identical to an earlier call: same result. Do not repeat calls."
ANSWER_NOW_NOTICE = (
    "You have repeated this identical call {count} times and it always gives the same"
    " result. Do not call tools again: reply now with the final JSON answer."
)
# From this many repeats of one call on, the model is told to answer now.
_REPEATS_BEFORE_ANSWER_NOW = 2
# A tool that overruns its own timeout is cut this much later.
_BACKSTOP_GRACE = 0.1
_LOGGED_ARGUMENT_CHARS = 2000

# Outputs equal across investigations (a storm's catalog answers) are held once.
_SHARED_OUTPUTS = SharedTexts()
# ... and redacted once while the registered secrets stay the same.
_REDACTED_OUTPUTS = RedactedOutputs()

# Answers that would be the same if the call were made again.
_DETERMINISTIC = frozenset(
    {ToolCallStatus.SUCCESS, ToolCallStatus.INVALID_ARGUMENTS, ToolCallStatus.UNKNOWN_TOOL}
)


@dataclass(frozen=True, slots=True)
class DispatchedCall:
    record: ToolCallRecord
    attempt: ValidationAttempt | None


class ToolDispatcher:
    """One investigation's tool calls (see module docstring)."""

    __slots__ = (
        "_answers",
        "_calls",
        "_calls_by_toolset",
        "_definitions",
        "_max_calls",
        "_observed",
        "_observer",
        "_records",
        "_repeats",
        "_tools",
        "_toolsets",
    )

    def __init__(
        self,
        toolsets: Sequence[Toolset],
        observer: InvestigationObserver,
        *,
        max_calls: int | None = None,
        observed: Observed | None = None,
    ) -> None:
        self._toolsets = tuple(toolsets)
        self._observed = observed
        self._observer = observer
        self._tools: dict[str, tuple[Tool, Toolset]] = {
            tool.name: (tool, toolset) for toolset in self._toolsets for tool in toolset.tools
        }
        self._max_calls = (
            sum(t.limits.max_calls for t in self._toolsets) if max_calls is None else max_calls
        )
        self._answers: dict[tuple[str, str], str] = {}
        self._repeats: dict[tuple[str, str], int] = {}
        self._records: list[ToolCallRecord] = []
        self._calls = 0
        self._calls_by_toolset = {t.name: 0 for t in self._toolsets}
        self._definitions: list[ToolDefinition] | None = None

    @property
    def toolsets(self) -> tuple[Toolset, ...]:
        return self._toolsets

    def definitions(self) -> list[ToolDefinition]:
        # Built once per investigation; callers only read them.
        if self._definitions is None:
            self._definitions = [d for toolset in self._toolsets for d in toolset.definitions()]
        return self._definitions

    def records(self) -> tuple[ToolCallRecord, ...]:
        """The investigation's tool calls so far, in order."""
        return tuple(self._records)

    async def run(self, call: ToolCall) -> DispatchedCall:
        """Answer one tool call; never raises for anything the model did."""
        started = time.perf_counter()
        raw = call.arguments or ""
        parsed, parse_error = parse_arguments(raw)
        key = (call.name, canonical_json(parsed) if parsed is not None else raw)
        entry = self._tools.get(call.name)
        label = metric_label(entry[0]) if entry is not None else UNKNOWN_TOOL_LABEL
        toolset = entry[1].name if entry is not None else ""

        previous = self._answers.get(key)
        if previous is not None:
            outcome = self._refusal(entry) or self._repeat(key, entry)
            text = (
                compact_json(outcome.payload)
                if outcome.status is ToolCallStatus.LIMIT_EXCEEDED
                else with_notice(previous, _repeat_notice(self._repeats[key]))
            )
        else:
            with self._observer.tool_call_span(label):
                outcome = await self._dispatch(call.name, parsed, parse_error)
            # Redacted once here, whatever the toolset: the text reaches the model,
            # the recorded ToolCallRecord, stream events and logs. Cut first (with
            # a margin, see redact_head), so a megabyte of log costs what the cap does.
            text = compact_json(outcome.payload)
            if entry is not None:
                text = _REDACTED_OUTPUTS.get(text, entry[1].limits.max_output_chars, _cap_output)
            else:
                text = redact(text)
            text = _SHARED_OUTPUTS.share(text)
            if outcome.status in _DETERMINISTIC:
                self._answers[key] = text
        redacted = redact_mapping(parsed) if parsed is not None else None
        record = ToolCallRecord(
            name=clip(redact(call.name), 128),
            raw_arguments=_shown_arguments(raw, parsed, redacted),
            arguments=redacted,
            result=text,
            status=outcome.status,
            duration_seconds=time.perf_counter() - started,
            served_by=_served_by(entry[0]) if entry is not None else None,
        )
        self._records.append(record)
        self._observer.tool_call_finished(label, toolset, record)
        _log(label, record)
        return DispatchedCall(record, outcome.attempt)

    def _refusal(self, entry: tuple[Tool, Toolset] | None) -> ToolResult | None:
        """LIMIT_EXCEEDED when the call would pass the investigation's or its toolset's cap."""
        if self._calls >= self._max_calls or (
            entry is not None and self._calls_by_toolset[entry[1].name] >= entry[1].limits.max_calls
        ):
            cap = self._max_calls if entry is None else entry[1].limits.max_calls
            return ToolResult(
                ToolCallStatus.LIMIT_EXCEEDED,
                {
                    "error": f"tool-call limit reached ({cap} per investigation)."
                    " Do not call tools again: reply now with the final JSON answer."
                },
            )
        return None

    def _repeat(self, key: tuple[str, str], entry: tuple[Tool, Toolset] | None) -> ToolResult:
        """Count a repeated call like any other; its answer is the earlier one."""
        self._calls += 1
        if entry is not None:
            self._calls_by_toolset[entry[1].name] += 1
        self._repeats[key] = self._repeats.get(key, 0) + 1
        return ToolResult(ToolCallStatus.REPEATED, {})

    async def _dispatch(
        self, name: str, parsed: dict[str, Any] | None, parse_error: str
    ) -> ToolResult:
        entry = self._tools.get(name)
        over_limit = self._refusal(entry)
        if over_limit is not None:
            return over_limit
        self._calls += 1
        if entry is None:
            return ToolResult(
                ToolCallStatus.UNKNOWN_TOOL,
                {
                    "error": f"unknown tool {one_line(name, 64)!r}; available tools:"
                    f" {', '.join(self._tools)}"
                },
            )
        tool, toolset = entry
        self._calls_by_toolset[toolset.name] += 1
        if parsed is None:
            return refused(
                f"arguments are not a JSON object ({parse_error}).", expected=tool_hint(tool)
            )
        try:
            args = validate_arguments(tool, parsed)
        except ArgumentsRejected as exc:
            return refused(exc.message, expected=tool_hint(tool))
        ctx = ToolContext(toolset.limits.call_timeout, self._observed)
        try:
            # Every request under the call clips the per-call timeout to the budget
            # itself (`request_timeout`) and says how it failed; this only cuts a
            # tool that does not.
            timeout = request_timeout(toolset.limits.call_timeout)
            async with asyncio.timeout(timeout + _BACKSTOP_GRACE):
                return await tool.run(args, ctx)
        except TimeoutError:
            return ToolResult(
                ToolCallStatus.TIMEOUT,
                {"error": f"{name} did not answer within {timeout:.3g}s; go on without it."},
            )
        except BudgetExhaustedError:
            # The investigation's own time ran out during the call: not a tool failure.
            return ToolResult(
                ToolCallStatus.TIMEOUT,
                {"error": "the investigation has no time left: reply now with the final answer."},
            )
        except Exception:
            logger.exception("tool %s failed unexpectedly", name)
            return ToolResult(ToolCallStatus.ERROR, {"error": f"{name} failed; go on without it."})


def _repeat_notice(repeats: int) -> str:
    if repeats >= _REPEATS_BEFORE_ANSWER_NOW:
        return ANSWER_NOW_NOTICE.format(count=repeats)
    return REPEAT_NOTICE


def _cap_output(text: str, limit: int) -> str:
    """`text` redacted and cut to `limit` characters, with a marker saying how much was cut."""
    shown, cut = redact_head(text, limit)
    if not cut:
        return shown
    return f"{shown}…[truncated: {cut} more characters]"


def _shown_arguments(raw: str, parsed: dict[str, Any] | None, redacted: Any) -> str:
    """The argument text as it may leave the process: redacted and bounded."""
    if parsed is not None:
        if redacted != parsed:
            return compact_json(redacted)  # the raw text would carry the secret values
    return clip(redact(raw), MAX_ARGUMENT_BYTES)


# Routine answers are counted and timed by the metrics and summed up in the
# investigation's own INFO line; only the others deserve a line of their own
# at INFO (an alert storm would otherwise write two lines per investigation).
_ROUTINE = frozenset({ToolCallStatus.SUCCESS, ToolCallStatus.REPEATED})


def _log(label: str, record: ToolCallRecord) -> None:
    level = logging.DEBUG if record.status in _ROUTINE else logging.INFO
    if not logger.isEnabledFor(level):
        return
    status = record.status.value.lower()
    result_bytes = len(record.result.encode())
    logger.log(
        level,
        "tool call %s status=%s duration=%.4fs result_bytes=%d",
        label,
        status,
        record.duration_seconds,
        result_bytes,
        extra={
            "tool": label,
            "status": status,
            "duration_seconds": record.duration_seconds,
            "result_bytes": result_bytes,
        },
    )
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "tool call %s arguments=%s",
            label,
            clip(record.raw_arguments, _LOGGED_ARGUMENT_CHARS),
        )


def _served_by(tool: Tool) -> tuple[str, str] | None:
    """(server, tool name there) for a tool another server declares and runs (an MCP
    server's tool), shown like the call's name is; None for our own."""
    origin = getattr(tool, "served_by", None)
    if not isinstance(origin, tuple):
        return None
    return clip(redact(origin[0]), 128), clip(redact(origin[1]), 128)
