"""Opener of the `mcp` toolsets (its spec names it): one toolset per enabled server.

The MCP SDK is tens of megabytes; this module is imported only when
`HAPI_MCP_CONFIG` is set.
"""

from __future__ import annotations

from hapi_grpc.adapters.mcp.errors import McpConfigError
from hapi_grpc.adapters.mcp.manager import McpManager, McpSettings
from hapi_grpc.domain.toolsets.mcp.settings import McpToolsetSettings
from hapi_grpc.domain.toolsets.mcp.tools import mcp_toolset_sources
from hapi_grpc.domain.toolsets.spec import OpenContext, Opened

__all__ = ["open_mcp"]


async def open_mcp(settings: McpToolsetSettings, context: OpenContext) -> Opened | None:
    """The servers of `HAPI_MCP_CONFIG`, connected (bounded by the connect timeout per
    server; a server that cannot be reached offers its tools as unavailable)."""
    mcp = McpSettings(
        settings.mcp_config, settings.mcp_refresh_seconds, settings.mcp_connect_timeout_seconds
    )
    try:
        manager = McpManager.from_settings(mcp, breaker_factory=context.breaker)
    except McpConfigError as exc:
        raise ValueError(f"HAPI_MCP_CONFIG: {exc}") from None
    if manager is None:
        return None
    await manager.start()
    return Opened(list(mcp_toolset_sources(manager)), manager.close)
