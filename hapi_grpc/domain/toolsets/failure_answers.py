"""Reader failures as answers: what every investigation toolset's `run` shares.

A tool reads through its toolset's port (cluster, metrics, alerts, a tool
server); the failures that port defines (a request refused, a source that
cannot answer now) come back to the model as a `ToolResult` it can act on,
never as an exception that fails the investigation. `FailureAnswers` is that
mapping, applied to a tool's `run` as a decorator; `refused` and
`unavailable` spell the two answers the toolsets have in common. Anything
else (the investigation's own deadline, cancellation) propagates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult

__all__ = ["FailureAnswers", "refused", "unavailable"]

_T = TypeVar("_T")
_A = TypeVar("_A")


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
