"""Keeping the conversation inside the model's context window.

Design notes: docs/internals.md (`domain/investigation/context_window.py`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence

from hapi_grpc.domain.errors import ContextOverflowError
from hapi_grpc.domain.llm import ChatMessage, ToolDefinition, ToolListMemo

__all__ = ["ContextWindow"]

DEFAULT_BYTES_PER_TOKEN = 3.0
# Role markers and separators each chat template wraps around a message.
_MESSAGE_OVERHEAD = 4
# One tool result may take at most this share of the prompt budget.
_TOOL_OUTPUT_SHARE = 0.25
_MIN_TOOL_OUTPUT_CHARS = 512
# The newest messages (the last exchange) are never trimmed.
_KEEP_NEWEST = 2
_TRIMMED_MARK = "[trimmed to fit the model's context window"


# Every investigation offers the same tools: their size is computed once.
_tools_bytes = ToolListMemo(lambda tools: sum(len(_tool_json(t)) for t in tools))


class ContextWindow:
    """One investigation's view of the model's context (docs/internals.md)."""

    __slots__ = (
        "bytes_per_token",
        "completion_tokens",
        "context_tokens",
        "last_estimate",
        "trimmed",
    )

    def __init__(self, context_tokens: int | None, completion_tokens: int) -> None:
        self.context_tokens = context_tokens
        self.completion_tokens = completion_tokens
        self.bytes_per_token = DEFAULT_BYTES_PER_TOKEN
        self.last_estimate = 0
        self.trimmed = 0  # messages trimmed so far

    @property
    def prompt_budget(self) -> int | None:
        """Prompt tokens a request may use; None when the context size is unknown."""
        if self.context_tokens is None:
            return None
        return self.context_tokens - self.completion_tokens

    def tool_output_chars(self) -> int | None:
        """The longest tool result (characters) the conversation takes in."""
        budget = self.prompt_budget
        if budget is None:
            return None
        return max(_MIN_TOOL_OUTPUT_CHARS, int(budget * self.bytes_per_token * _TOOL_OUTPUT_SHARE))

    def compact_tool_output(self, text: str) -> str:
        limit = self.tool_output_chars()
        if limit is None or len(text) <= limit:
            return text
        cut = len(text) - limit
        return f"{text[:limit]}…[cut to fit the model's context window: {cut} more characters]"

    def fit(self, messages: list[ChatMessage], tools: Sequence[ToolDefinition]) -> int:
        """Trim `messages` in place until the request fits; returns its estimate.

        Raises `ContextOverflowError` when it cannot fit.
        """
        estimate = self._estimate(messages, tools)
        budget = self.prompt_budget
        if budget is not None and estimate > budget:
            for index in self._trimmable(messages):
                messages[index] = _trimmed(messages[index])
                self.trimmed += 1
                estimate = self._estimate(messages, tools)
                if estimate <= budget:
                    break
            if estimate > budget:
                raise ContextOverflowError(
                    f"the conversation needs about {estimate} tokens; the model's context of"
                    f" {self.context_tokens} keeps {self.completion_tokens} for the answer"
                )
        self.last_estimate = estimate
        return estimate

    def after_overflow(self, messages: list[ChatMessage]) -> bool:
        """The provider refused the request as too long: trim harder.

        Tightens the estimate and trims the older half of what can still be
        trimmed (at least one message). False when nothing is left to trim.
        """
        self.bytes_per_token = max(1.0, self.bytes_per_token * 0.75)
        candidates = list(self._trimmable(messages))
        if not candidates:
            return False
        for index in candidates[: max(1, len(candidates) // 2)]:
            messages[index] = _trimmed(messages[index])
            self.trimmed += 1
        return True

    def observe(self, reported_prompt_tokens: int) -> None:
        """Tighten the estimate when the provider counted more than estimated."""
        if self.last_estimate > 0 and reported_prompt_tokens > self.last_estimate:
            self.bytes_per_token = max(
                1.0, self.bytes_per_token * self.last_estimate / reported_prompt_tokens
            )

    def _estimate(self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition]) -> int:
        size = sum(_message_bytes(m) for m in messages) + _tools_bytes(tools)
        return math.ceil(size / self.bytes_per_token) + _MESSAGE_OVERHEAD * len(messages)

    def _trimmable(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Indexes to trim, in order: tool results oldest first, then rejected answers."""
        newest = len(messages) - _KEEP_NEWEST
        open_ = [
            i
            for i, m in enumerate(messages[:newest])
            if not m.content.startswith(_TRIMMED_MARK) and len(m.content) > len(_TRIMMED_MARK) * 2
        ]
        tools = [i for i in open_ if messages[i].role == "tool"]
        answers = [
            i for i in open_ if messages[i].role == "assistant" and not messages[i].tool_calls
        ]
        return tools + answers


def _trimmed(message: ChatMessage) -> ChatMessage:
    what = f"this {message.name} result" if message.role == "tool" else "this earlier answer"
    note = f"{_TRIMMED_MARK}: {what} ({len(message.content)} characters) was removed." + (
        " Call the tool again only if you still need it.]" if message.role == "tool" else "]"
    )
    return dataclasses.replace(message, content=note)


def _message_bytes(message: ChatMessage) -> int:
    size = len(message.content.encode())
    for call in message.tool_calls:
        size += len(call.name.encode()) + len(call.arguments.encode()) + len(call.id)
    return size + len(message.tool_call_id) + len(message.name)


def _tool_json(tool: ToolDefinition) -> bytes:
    return json.dumps(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()
