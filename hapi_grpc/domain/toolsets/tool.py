"""One tool: a name, a description, an argument model and `run`.

Design notes: docs/internals.md (`domain/toolsets/tool.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from hapi_grpc.domain.llm import ToolDefinition
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.result import ToolCallStatus, ValidationAttempt

__all__ = [
    "ArgumentsRejected",
    "FailureAnswers",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolResult",
    "metric_label",
    "refused",
    "tool_definition",
    "tool_hint",
    "tool_json_schema",
    "unavailable",
    "validate_arguments",
]

_T = TypeVar("_T")
_A = TypeVar("_A")

_ERRORS_SHOWN = 10


class ToolArgs(BaseModel):
    """Base of every argument model: unknown arguments are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may spend and where it records what it read.

    The call's deadline is the budget in scope (`deadline`); `timeout` is the
    toolset's per-call setting, which requests clip to it (`request_timeout`).
    """

    timeout: float  # the toolset's per-call timeout (a setting, not the budget)
    observed: Observed | None = None  # the investigation's record of what tools read


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool answered. `payload` is shown to the model as compact JSON."""

    status: ToolCallStatus
    payload: dict[str, Any]
    attempt: ValidationAttempt | None = None  # a parameter validation it spent


class Tool(Protocol):
    """A tool offered to the model."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def arguments(self) -> type[ToolArgs] | None:
        """The argument model; None for a tool that is also `OwnSchema`."""
        ...

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult: ...


class ArgumentsRejected(Exception):
    """Arguments that do not fit a tool; `message` says what to change."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OwnSchema(Protocol):
    """A tool described by a JSON Schema it brings instead of an argument model."""

    @property
    def json_schema(self) -> dict[str, Any]: ...

    def parse(self, raw: dict[str, Any]) -> Any:
        """The validated arguments; raises ArgumentsRejected."""
        ...


def _own_schema(tool: Tool) -> OwnSchema | None:
    return tool if tool.arguments is None else None  # type: ignore[return-value]


def tool_parameters(tool: Tool) -> dict[str, Any]:
    """The JSON Schema of the tool's arguments, as shown to the model."""
    own = _own_schema(tool)
    if own is not None:
        return own.json_schema
    assert tool.arguments is not None
    return tool_json_schema(tool.arguments)


def validate_arguments(tool: Tool, parsed: dict[str, Any]) -> Any:
    """The tool's validated arguments; raises ArgumentsRejected with the problems."""
    own = _own_schema(tool)
    if own is not None:
        return own.parse(parsed)
    assert tool.arguments is not None
    try:
        return tool.arguments.model_validate(parsed)
    except ValidationError as exc:
        raise ArgumentsRejected("invalid arguments: " + describe_validation_error(exc)) from None


def tool_hint(tool: Tool) -> str:
    """The one-line argument summary of any tool, for error answers."""
    return _schema_hint(tool_parameters(tool))


def metric_label(tool: Tool) -> str:
    """The tool's name on metrics and spans.

    Names from a closed set only: a tool whose name comes from elsewhere (an
    MCP server's tool nobody allow-listed) says so with a `metric_label`.
    """
    label = getattr(tool, "metric_label", None)
    return label if isinstance(label, str) else tool.name


def tool_definition(tool: Tool) -> ToolDefinition:
    return ToolDefinition(
        name=tool.name, description=tool.description, parameters=tool_parameters(tool)
    )


@functools.cache
def tool_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema as a tool definition: no titles, no null unions.

    The class docstring is dropped: the tool's own description is what the
    model reads. Built once per model and shared by every investigation:
    read it, never change it (pydantic's schema generation, or even a deep
    copy per investigation, cost more than the rest of starting one).
    """
    schema = _clean_schema(model.model_json_schema())
    schema.pop("description", None)
    return schema


def _clean_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    node.pop("title", None)
    options = node.get("anyOf")
    if isinstance(options, list):
        # `X | None` becomes X: an omitted argument already means "not set",
        # and some providers reject union types in tool schemas.
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options):
            node.pop("anyOf")
            node = {**kept[0], **node}
            if node.get("default", 0) is None:
                node.pop("default")
    return {key: _clean_schema(value) for key, value in node.items()}


def _schema_hint(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", ()))
    parts = []
    properties = schema.get("properties")
    for name, prop in (properties if isinstance(properties, dict) else {}).items():
        if not isinstance(prop, dict):
            continue
        kind = prop.get("type", "any")
        extra = []
        if "enum" in prop:
            extra.append("|".join(str(v) for v in prop["enum"]))
        if "minimum" in prop or "maximum" in prop:
            extra.append(f"{prop.get('minimum', '')}-{prop.get('maximum', '')}")
        if "default" in prop:
            extra.append(f"default {prop['default']}")
        if name in required:
            extra.append("required")
        parts.append(f"{name} ({kind}{', ' + ', '.join(extra) if extra else ''})")
    return "; ".join(parts)


def describe_validation_error(exc: ValidationError) -> str:
    """The argument errors, one `where: what` each, for the model."""
    problems = []
    for error in exc.errors(include_url=False)[:_ERRORS_SHOWN]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown argument"
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


def refused(message: str, **extra: str) -> ToolResult:
    """The request was refused; `message` says what to change."""
    return ToolResult(ToolCallStatus.INVALID_ARGUMENTS, {"error": message, **extra})


def unavailable(what: str, message: str, *, them: bool = False) -> ToolResult:
    """`what` cannot answer now; the investigation goes on without it."""
    pronoun = "them" if them else "it"
    return ToolResult(
        ToolCallStatus.ERROR,
        {"error": f"{what} unavailable now ({message}); go on without {pronoun}."},
    )


@dataclass(frozen=True, slots=True)
class FailureAnswers:
    """The port's `failures`, answered by `answer` instead of raised."""

    failures: tuple[type[Exception], ...]
    answer: Callable[[Any], ToolResult]

    def __call__(
        self, run: Callable[[_T, _A, ToolContext], Coroutine[Any, Any, ToolResult]]
    ) -> Callable[[_T, _A, ToolContext], Coroutine[Any, Any, ToolResult]]:
        @functools.wraps(run)
        async def answered(tool: _T, args: _A, ctx: ToolContext) -> ToolResult:
            try:
                return await run(tool, args, ctx)
            except self.failures as exc:
                return self.answer(exc)

        return answered
