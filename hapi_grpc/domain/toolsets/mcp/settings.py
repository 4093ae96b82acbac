"""Settings of the `mcp` toolsets (`HAPI_MCP_*`): one toolset per tool server of the
servers file, whose caps and timeouts are per server in it."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["McpToolsetSettings"]


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
