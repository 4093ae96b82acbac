"""The `mcp` toolsets' spec: the tools of MCP tool servers, one toolset `mcp:<server>` each."""

from __future__ import annotations

from hapi_grpc.domain.toolsets.mcp.settings import McpToolsetSettings
from hapi_grpc.domain.toolsets.spec import ToolsetSpec

__all__ = ["DATA_KEY", "NAME", "SPEC", "TOOLSET_PREFIX"]

NAME = "mcp"
TOOLSET_PREFIX = NAME + ":"
DATA_KEY = "tool_server_data"


def _files(settings: McpToolsetSettings) -> tuple[str, ...]:
    return ("mcp_config",)


SPEC = ToolsetSpec(
    name=NAME,
    prompt_note="tools of MCP tool servers",  # each server's toolset names its own tools
    settings=McpToolsetSettings,
    enabled_by="mcp_config",
    opener="hapi_grpc.adapters.mcp.toolsets:open_mcp",
    readable_files=_files,  # caps and timeouts are per server, in the file
    untrusted_data=True,
    data_key=DATA_KEY,
)
