"""The `mcp` toolsets: tools of MCP tool servers, one toolset `mcp:<server>` each. Their
settings and what the service knows of them; the servers file (`config`), the
connections (`connection`, `manager`, `schemas`) and the tools (`tools`) are
imported when it is opened: the MCP SDK alone is tens of megabytes that a
server without MCP would carry.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from hapi_grpc.toolsets.base import OpenContext, Opened, ToolsetPlugin

__all__ = ["McpToolset", "McpToolsetSettings"]


class McpToolsetSettings(BaseModel):
    """Tools of MCP tool servers, one toolset `mcp:<server>` each; caps and timeouts
    are per server in the servers file."""

    mcp_config: str | None = Field(
        None,
        description=(
            "MCP servers file ([toolsets.md](toolsets.md#mcp-tool-servers)); caps and timeouts "
            "per server are in it."
        ),
    )
    mcp_refresh_seconds: float = Field(
        300.0,
        ge=0,
        description="Tool listing refresh and reconnection interval; 0 = only at startup.",
    )
    mcp_connect_timeout_seconds: float = Field(
        10.0, gt=0, le=300, description="Connecting and listing one server."
    )


class McpToolset(ToolsetPlugin[McpToolsetSettings]):
    """The servers of the servers file; each server's tools with their own JSON Schema."""

    name = "mcp"
    prompt_note = "tools of MCP tool servers"  # each server's toolset names its own tools
    settings_model = McpToolsetSettings
    enabled_by = "mcp_config"
    data_key = "tool_server_data"

    def readable_files(self) -> tuple[str, ...]:
        return ("mcp_config",)  # caps and timeouts are per server, in the file

    async def open(self, context: OpenContext) -> Opened | None:
        """The servers of `HAPI_MCP_CONFIG`, connected (bounded by the connect timeout per
        server; a server that cannot be reached offers its tools as unavailable)."""
        from hapi_grpc.toolsets.mcp.config import McpConfigError
        from hapi_grpc.toolsets.mcp.manager import McpManager
        from hapi_grpc.toolsets.mcp.tools import McpToolsetSource

        try:
            manager = McpManager.from_settings(self.settings, breaker_factory=context.breaker)
        except McpConfigError as exc:
            raise ValueError(f"HAPI_MCP_CONFIG: {exc}") from None
        if manager is None:
            return None
        await manager.start()
        return Opened([McpToolsetSource(manager, s) for s in manager.servers()], manager.close)
