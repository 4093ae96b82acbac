"""MCP tool servers' tools as the model is offered them, and what one call answers.

Design notes: docs/internals.md (`toolsets/mcp/tools.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hapi_grpc.domain.bounded_json import check_depth
from hapi_grpc.domain.errors import HapiError
from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.sensitive import clip
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.tool import (
    ArgumentsRejected,
    Tool,
    ToolContext,
    ToolResult,
    refused,
    unavailable,
)
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.toolsets.mcp import McpToolset

if TYPE_CHECKING:
    from hapi_grpc.toolsets.mcp.manager import McpManager

__all__ = [
    "SEPARATOR",
    "McpCallResult",
    "McpTool",
    "McpToolError",
    "McpToolsetSource",
    "McpUnavailableError",
    "content_text",
]

SEPARATOR = "__"
OTHER_TOOL_LABEL = "other"
# The wrapper around a result's text; the text itself is capped by the server's maxOutputChars.
_WRAPPER_CHARS = 512
_MAX_NAMES_IN_PROMPT = 20


class McpToolError(HapiError):
    """The call was refused before reaching the server: unknown tool, arguments that
    do not fit the tool's schema, or the server's call cap reached. The message
    tells the model what to change."""


class McpUnavailableError(HapiError):
    """The server cannot answer now: not connected, too slow, died, or its breaker is open."""


@dataclass(frozen=True)
class McpTool:
    """A tool as offered to the model."""

    name: str  # <server>__<tool>
    server: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class McpCallResult:
    server: str
    tool: str
    text: str
    is_error: bool
    truncated: bool


def content_text(result: Any) -> str:
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'unknown'} content omitted]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        try:
            check_depth(structured)
        except ValueError as exc:
            return f"[structured content omitted: {exc}]"
        parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":"), default=str))
    return "\n".join(parts)


@dataclass(frozen=True)
class McpServerTool:
    """One server tool as offered to the model (`OwnSchema`: the server's JSON Schema)."""

    servers: McpManager
    info: McpTool
    allow_listed: bool
    arguments: None = None

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def description(self) -> str:
        text = self.info.description or f"Tool {self.info.tool} of the {self.info.server} server."
        return clip(text, 1000)

    @property
    def json_schema(self) -> dict[str, Any]:
        return dict(self.info.input_schema)

    @property
    def served_by(self) -> tuple[str, str]:
        return (self.info.server, self.info.tool)

    @property
    def metric_label(self) -> str:
        """The tool's name on metrics: only names the operator allow-listed."""
        return self.info.name if self.allow_listed else OTHER_TOOL_LABEL

    def parse(self, raw: dict[str, Any]) -> dict[str, Any]:
        problem = self.servers.check_arguments(self.info.name, raw)
        if problem is not None:
            raise ArgumentsRejected(problem)
        return raw

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        server = self.info.server
        try:
            result = await self.servers.call(self.info.name, args, timeout=ctx.timeout)
        except McpToolError as exc:
            return refused(exc.message)
        except McpUnavailableError as exc:
            return unavailable(f"the tools of server {server!r} are", exc.message, them=True)
        data: dict[str, Any] = {"server": server, "tool": self.info.tool, "content": result.text}
        if result.truncated:
            data["truncated"] = "the result was cut to the server's output cap"
        if result.is_error:
            return ToolResult(
                ToolCallStatus.ERROR,
                {"error": f"{self.info.name} reported an error", McpToolset.data_key: data},
            )
        return ToolResult(ToolCallStatus.SUCCESS, {McpToolset.data_key: data})


@dataclass(frozen=True)
class McpToolsetSource:
    """Makes each investigation's toolset of one server from the tools it listed last.

    A server that answered once keeps its tools offered while it is down (they
    answer "unavailable"); one that never answered offers none, and the engine
    leaves an empty toolset out.
    """

    servers: McpManager
    server: str

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        # What an MCP server answers is not recorded: its tools are the server's own.
        config = self.servers.server_config(self.server)
        tools: list[Tool] = [
            McpServerTool(self.servers, info, info.tool in (config.allowed_tools or ()))
            for info in self.servers.tools(include_unavailable=True)
            if info.server == self.server
        ]
        limits = ToolsetLimits(
            max_calls=config.max_calls,
            call_timeout=config.timeout_seconds,
            max_output_chars=config.max_output_chars + _WRAPPER_CHARS,
        )
        names = ", ".join(t.name for t in tools[:_MAX_NAMES_IN_PROMPT])
        more = f" and {len(tools) - _MAX_NAMES_IN_PROMPT} more" if len(tools) > 20 else ""
        note = f"tools of the {self.server!r} tool server ({names}{more})"
        return McpToolset.toolset(tools, limits, instance=self.server, note=note)
