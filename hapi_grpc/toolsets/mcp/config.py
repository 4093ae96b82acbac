"""The MCP server configuration file (`HAPI_MCP_CONFIG`).

Design notes: docs/internals.md (`toolsets/mcp/config.py`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.sensitive import clip, is_secret_name, register_secret

__all__ = ["McpConfig", "McpConfigError", "McpServerConfig", "load_mcp_config"]

# Exposed tool names are `<server>__<tool>` and must fit model APIs' tool-name rules.
SERVER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$")
MAX_CONFIG_BYTES = 1024 * 1024


class McpConfigError(ValueError):
    """The MCP configuration file is unreadable or invalid; the message names server and key."""


class McpServerConfig(BaseModel):
    """One server: `command` (stdio) or `url` (streamable HTTP), plus our keys."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    disabled: bool = False
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    allowed_tools: list[str] | None = Field(default=None, alias="allowedTools")
    denied_tools: list[str] = Field(default_factory=list, alias="deniedTools")
    max_calls: int = Field(default=10, alias="maxCalls", ge=1, le=1000)
    timeout_seconds: float = Field(default=30.0, alias="timeoutSeconds", gt=0, le=600)
    token_file: str | None = Field(default=None, alias="tokenFile")
    max_output_chars: int = Field(default=20_000, alias="maxOutputChars", ge=200, le=1_000_000)
    max_tools: int = Field(default=50, alias="maxTools", ge=1, le=500)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an absolute http(s) URL")
        return value

    @field_validator("headers")
    @classmethod
    def _header_values(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not re.match(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$", name):
                raise ValueError(f"{name!r} is not a valid header name")
            if "\r" in text or "\n" in text:
                raise ValueError(f"the value of {name!r} contains a line break")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (stdio) or url (streamable HTTP), not both")
        if self.command is not None and (self.headers or self.token_file):
            raise ValueError("headers and tokenFile apply to url servers only")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("args, env and cwd apply to command servers only")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def offers(self, tool: str) -> bool:
        """Whether the allow and deny lists let `tool` through."""
        if tool in self.denied_tools:
            return False
        return self.allowed_tools is None or tool in self.allowed_tools


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    mcp_servers: dict[str, McpServerConfig] = Field(alias="mcpServers")

    @field_validator("mcp_servers")
    @classmethod
    def _names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in value:
            if not SERVER_NAME.match(name):
                raise ValueError(
                    f"server name {clip(name, 40)!r} must be 1-32 letters, digits, '-' or '_' "
                    "(no '__', which separates server and tool in tool names)"
                )
        return value

    def enabled(self) -> dict[str, McpServerConfig]:
        return {name: server for name, server in self.mcp_servers.items() if not server.disabled}


def _where(loc: tuple[int | str, ...]) -> str:
    if len(loc) >= 2 and loc[0] == "mcpServers":
        server = f"server {str(loc[1])!r}"
        key = ".".join(str(part) for part in loc[2:])
        return f"{server}, key {key!r}" if key else server
    return "key " + repr(".".join(str(part) for part in loc)) if loc else "top level"


def parse_mcp_config(data: Any, source: str = "MCP config") -> McpConfig:
    """Validate a decoded configuration; errors name the server and the key."""
    try:
        config = McpConfig.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{_where(tuple(err['loc']))}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)[:10]
        ]
        raise McpConfigError(f"{source}: " + "; ".join(problems)) from None
    for server in config.mcp_servers.values():
        # Credentials passed in the environment or headers stay out of every message.
        for mapping in (server.env, server.headers):
            for name, value in mapping.items():
                if is_secret_name(name):
                    register_secret(value)
    return config


def load_mcp_config(path: str | Path) -> McpConfig:
    """Read and validate the file named by `HAPI_MCP_CONFIG`."""
    source = f"MCP config {str(path)!r}"
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise McpConfigError(
            f"{source}: cannot read ({exc.strerror or type(exc).__name__})"
        ) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise McpConfigError(f"{source}: larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = bounded_json.loads(raw, max_bytes=len(raw) + 1)  # size checked when read
    except ValueError as exc:
        raise McpConfigError(f"{source}: not valid JSON ({exc})") from None
    return parse_mcp_config(data, source)
