"""Toolsets from MCP tool servers: one per configured server, behind the `ToolServers` port.

Each server's tools are offered as `<server>__<tool>` with the server's own
JSON Schema (tools that are `OwnSchema`: no argument model); arguments are
checked against that schema before any call, and a misfit is an
INVALID_ARGUMENTS answer saying what to change. The toolset is named
`mcp:<server>` and takes its call cap, per-call timeout and output cap from
the server's configuration (`maxCalls`, `timeoutSeconds`, `maxOutputChars`).

A server that is down, slow or dies mid-call does not fail the investigation:
its tools answer that they are unavailable. Results are the server's text,
capped, wrapped under `DATA_KEY` as untrusted data. Tool names reach metrics
only when the operator allow-listed them; every other tool counts as `other`.
The adapter (`hapi_grpc.adapters.mcp.manager.McpManager`) implements the port.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hapi_grpc.domain.errors import HapiError
from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.sensitive import clip
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.failure_answers import refused, unavailable
from hapi_grpc.domain.toolsets.mcp.spec import DATA_KEY, TOOLSET_PREFIX
from hapi_grpc.domain.toolsets.tool import ArgumentsRejected, Tool, ToolContext, ToolResult
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits

__all__ = [
    "DATA_KEY",
    "OTHER_TOOL_LABEL",
    "SEPARATOR",
    "McpServerTool",
    "McpToolsetSource",
    "ToolServerRefusal",
    "ToolServerUnavailable",
    "ToolServers",
    "toolset_name",
]

SEPARATOR = "__"
OTHER_TOOL_LABEL = "other"
# The wrapper around a result's text; the text itself is capped by the server's maxOutputChars.
_WRAPPER_CHARS = 512
_MAX_NAMES_IN_PROMPT = 20


class ToolServerRefusal(HapiError):
    """The call was refused before reaching the server (schema, unknown tool, cap)."""


class ToolServerUnavailable(HapiError):
    """The server cannot answer now: not connected, too slow, died, breaker open."""


class ServerTool(Protocol):
    @property
    def name(self) -> str: ...  # <server>__<tool>

    @property
    def server(self) -> str: ...

    @property
    def tool(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> Mapping[str, Any]: ...


class ServerToolResult(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def truncated(self) -> bool: ...


class ServerSettings(Protocol):
    @property
    def allowed_tools(self) -> list[str] | None: ...

    @property
    def max_calls(self) -> int: ...

    @property
    def timeout_seconds(self) -> float: ...

    @property
    def max_output_chars(self) -> int: ...


class ToolServers(Protocol):
    """The tool servers of a deployment and calls to their tools."""

    def servers(self) -> list[str]: ...

    def server_config(self, server: str) -> ServerSettings | None: ...

    def tools(self, *, include_unavailable: bool = False) -> Sequence[ServerTool]: ...

    def check_arguments(self, name: str, arguments: Any) -> str | None: ...

    async def call(
        self, name: str, arguments: Any, *, timeout: float | None = None
    ) -> ServerToolResult: ...


def toolset_name(server: str) -> str:
    return TOOLSET_PREFIX + server


@dataclass(frozen=True)
class McpServerTool:
    """One server tool as offered to the model (`OwnSchema`: the server's JSON Schema)."""

    servers: ToolServers
    info: ServerTool
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
        except ToolServerRefusal as exc:
            return refused(exc.message)
        except ToolServerUnavailable as exc:
            return unavailable(f"the tools of server {server!r} are", exc.message, them=True)
        data: dict[str, Any] = {"server": server, "tool": self.info.tool, "content": result.text}
        if result.truncated:
            data["truncated"] = "the result was cut to the server's output cap"
        if result.is_error:
            return ToolResult(
                ToolCallStatus.ERROR,
                {"error": f"{self.info.name} reported an error", DATA_KEY: data},
            )
        return ToolResult(ToolCallStatus.SUCCESS, {DATA_KEY: data})


@dataclass(frozen=True)
class McpToolsetSource:
    """Makes each investigation's toolset of one server from the tools it listed last.

    A server that answered once keeps its tools offered while it is down (they
    answer "unavailable"); one that never answered offers none, and the engine
    leaves an empty toolset out.
    """

    servers: ToolServers
    server: str

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        # What an MCP server answers is not recorded: its tools are the server's own.
        config = self.servers.server_config(self.server)
        allowed = set(config.allowed_tools or ()) if config is not None else set()
        listed = config is not None and config.allowed_tools is not None
        tools: list[Tool] = [
            McpServerTool(self.servers, info, listed and info.tool in allowed)
            for info in self.servers.tools(include_unavailable=True)
            if info.server == self.server
        ]
        limits = ToolsetLimits(
            max_calls=config.max_calls if config is not None else 0,
            call_timeout=config.timeout_seconds if config is not None else 1.0,
            max_output_chars=(config.max_output_chars if config is not None else 0)
            + _WRAPPER_CHARS,
        )
        names = ", ".join(t.name for t in tools[:_MAX_NAMES_IN_PROMPT])
        more = f" and {len(tools) - _MAX_NAMES_IN_PROMPT} more" if len(tools) > 20 else ""
        note = f"tools of the {self.server!r} tool server ({names}{more})"
        return Toolset(toolset_name(self.server), tools, limits, prompt_note=note)


def mcp_toolset_sources(servers: ToolServers) -> list[McpToolsetSource]:
    """One source per enabled server."""
    return [McpToolsetSource(servers, name) for name in servers.servers()]
