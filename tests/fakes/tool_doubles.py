"""A tool double for dispatcher tests: no arguments, answers what `payload()` builds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.toolsets.tool import ToolArgs, ToolContext, ToolResult


class NoArgs(ToolArgs):
    pass


class PayloadTool:
    """Tool `name`: every call succeeds with a fresh `payload()`."""

    arguments = NoArgs

    def __init__(self, name: str, description: str, payload: Callable[[], Any]) -> None:
        self.name = name
        self.description = description
        self._payload = payload

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult(ToolCallStatus.SUCCESS, self._payload())
