"""Errors of the MCP client: one the model can act on, one that says "not now"."""

from __future__ import annotations

from hapi_grpc.domain.toolsets.mcp.tools import ToolServerRefusal, ToolServerUnavailable


class McpConfigError(ValueError):
    """The MCP configuration file is unreadable or invalid; the message names server and key."""


class McpToolError(ToolServerRefusal):
    """The call was refused before reaching the server: unknown tool, arguments that
    do not fit the tool's schema, or the server's call cap reached. The message
    tells the model what to change."""


class McpUnavailableError(ToolServerUnavailable):
    """The server cannot answer now: not connected, too slow, died, or its breaker is open."""
