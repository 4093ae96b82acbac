"""The language-model port: a provider-neutral chat with tool calling.

Adapters (OpenAI-compatible, Anthropic, the built-in analyst) translate these
types to and from their wire formats. The engine only ever sees these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from hapi_grpc.domain.incident import Incident
    from hapi_grpc.domain.observed import Observed

Role = Literal["system", "user", "assistant", "tool"]
# "auto": the model may call the offered tools or answer; "none": it must
# answer in text (the last turn). The tools are still described either way.
ToolChoice = Literal["auto", "none"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool offered to the model; `parameters` is a JSON Schema object, read-only once offered."""

    name: str
    description: str
    parameters: dict[str, Any]


T = TypeVar("T")


class ToolListMemo(Generic[T]):
    """`compute(tools)` remembered per distinct tool list, at most `kept` lists, oldest out.

    Every investigation offers the same tools, built on shared schema objects,
    so what is derived from a list (its encoded JSON, its size) need not be
    derived again on every turn. A list is known by its names, descriptions
    and schema objects; the schemas are held here, so a schema's identity
    cannot be reused by another while its value is remembered.
    """

    __slots__ = ("_compute", "_kept", "_known")

    def __init__(self, compute: Callable[[Sequence[ToolDefinition]], T], kept: int = 64) -> None:
        self._compute = compute
        self._kept = kept
        self._known: dict[tuple[tuple[str, str, int], ...], tuple[tuple[object, ...], T]] = {}

    def __call__(self, tools: Sequence[ToolDefinition]) -> T:
        key = tuple((t.name, t.description, id(t.parameters)) for t in tools)
        known = self._known.get(key)
        if known is None:
            if len(self._known) >= self._kept:
                del self._known[next(iter(self._known))]
            value = self._compute(tools)
            known = self._known[key] = (tuple(t.parameters for t in tools), value)
        return known[1]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call requested by the model.

    `arguments` is the raw JSON text the model produced: it may be malformed,
    and the tool handler (not the adapter) decides what to do with it.
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the conversation.

    - system/user: `content`.
    - assistant: `content` and/or `tool_calls`.
    - tool: `content` is the tool result, `tool_call_id` and `name` say which call.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """What one model turn returned."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = ""
    finish_reason: str = ""


@runtime_checkable
class LLMProvider(Protocol):
    """A chat model that can call tools.

    `complete` honours the current `hapi_grpc.domain.deadline` budget for its
    timeouts, retries transient failures within it, and raises
    `LLMUnavailableError` when the provider cannot answer,
    `ContextOverflowError` (never retried) when the conversation does not fit
    the model's context, or `BudgetExhaustedError` when the budget ran out.
    Cancelling the awaiting task aborts the HTTP request. `tool_choice="none"`
    asks for a text answer: each adapter maps it to its protocol's way of
    forbidding tool calls.
    """

    name: str  # provider name for metrics: "openai", "anthropic", "builtin"
    model: str  # model name reported in results; "" when no model is used
    uses_language_model: bool  # False for the built-in deterministic analyst

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolDefinition],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> LLMResponse: ...

    async def close(self) -> None: ...


@runtime_checkable
class DecidesFromRecord(Protocol):
    """A provider that decides from the incident itself and the service's own record of
    what its tool calls read (the built-in analyst), not from the prompt's text: the
    engine hands it each investigation's incident and record."""

    def investigating(self, incident: Incident, observed: Observed) -> LLMProvider:
        """This provider for one investigation of `incident` whose tools fill `observed`."""
        ...
