"""The MCP servers of a deployment, their tools, and calls to them.

Design notes: docs/internals.md (`toolsets/mcp/manager.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import mcp_types
from mcp.shared.exceptions import MCPError

from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.domain import deadline
from hapi_grpc.domain.errors import BudgetExhaustedError, CatalogUnavailableError
from hapi_grpc.domain.sensitive import clip, redact
from hapi_grpc.toolsets.mcp import McpToolsetSettings
from hapi_grpc.toolsets.mcp.config import McpConfig, McpServerConfig, load_mcp_config
from hapi_grpc.toolsets.mcp.connection import McpConnection, cause
from hapi_grpc.toolsets.mcp.schemas import linear_validator, problem_text
from hapi_grpc.toolsets.mcp.tools import (
    SEPARATOR,
    McpCallResult,
    McpTool,
    McpToolError,
    McpUnavailableError,
    content_text,
)

log = logging.getLogger(__name__)

__all__ = ["McpManager"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_DESCRIPTION = 1000
# Every offered schema goes into the prompt; a larger one is not offered.
_MAX_SCHEMA_ERRORS = 5
_BUDGET_SLACK = 0.05


@dataclass
class _Server:
    config: McpServerConfig
    breaker: RateCircuitBreaker
    connection: McpConnection | None = None
    tools: dict[str, tuple[McpTool, Any]] = field(default_factory=dict)  # name -> tool, validator
    available: bool = False
    reason: str = "not connected yet"


class McpManager:
    """Connections to every enabled server of `config`, and their tools."""

    def __init__(
        self,
        config: McpConfig,
        *,
        refresh_interval: float = 300.0,
        connect_timeout: float = 10.0,
        breaker_factory: Callable[[str], RateCircuitBreaker] | None = None,
    ) -> None:
        if refresh_interval < 0 or connect_timeout <= 0:
            raise ValueError("refresh_interval must be >= 0 and connect_timeout > 0")
        make_breaker = breaker_factory or (lambda name: RateCircuitBreaker(name))
        self._servers = {
            name: _Server(cfg, make_breaker(f"mcp_{name}"))
            for name, cfg in sorted(config.enabled().items())
        }
        self._refresh_interval = refresh_interval
        self._connect_timeout = connect_timeout
        self._loop_task: asyncio.Task[None] | None = None
        self._refresh_lock = asyncio.Lock()

    @classmethod
    def from_settings(
        cls,
        settings: McpToolsetSettings,
        breaker_factory: Callable[[str], RateCircuitBreaker] | None = None,
    ) -> McpManager | None:
        """A manager for `HAPI_MCP_CONFIG`, or None when it is unset.

        Raises McpConfigError (naming the server and key) for a bad file:
        a configuration mistake stops the service at startup, an unreachable
        server never does.
        """
        if not settings.mcp_config:
            return None
        return cls(
            load_mcp_config(settings.mcp_config),
            refresh_interval=settings.mcp_refresh_seconds,
            connect_timeout=settings.mcp_connect_timeout_seconds,
            breaker_factory=breaker_factory,
        )

    # -- lifecycle ----------------------------------------------------------------

    async def start(self) -> None:
        """First refresh, then a background refresh every `refresh_interval` (0: never)."""
        await self.refresh()
        if self._refresh_interval > 0 and self._loop_task is None:
            self._loop_task = asyncio.create_task(self._refresh_loop(), name="mcp-refresh")

    async def close(self) -> None:
        """Stop refreshing and close every session (stdio servers are stopped)."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
            self._loop_task = None
        conns = [s.connection for s in self._servers.values() if s.connection is not None]
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
        for server in self._servers.values():
            server.connection, server.available = None, False

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_interval)
            try:
                await self.refresh()
            except Exception:  # never let the loop die; each server logs its own failure
                log.exception("MCP refresh failed")

    async def refresh(self) -> None:
        """Reconnect servers that are down and list every server's tools again."""
        async with self._refresh_lock:
            await asyncio.gather(*(self._refresh_server(name) for name in self._servers))

    async def _refresh_server(self, name: str) -> None:
        server = self._servers[name]
        for attempt in range(2):
            conn = server.connection
            try:
                if conn is None or not conn.alive:
                    if conn is not None:
                        await conn.close()
                    conn = server.connection = McpConnection(name, server.config)
                    await conn.open(self._connect_timeout)
                async with asyncio.timeout(self._connect_timeout):
                    listed = await conn.list_tools()
            except Exception as exc:
                if conn is not None:
                    conn.mark_dead()
                reason = _describe(exc)
                if attempt == 0 and server.available:
                    continue  # it was up a moment ago: try a fresh connection once
                if server.available or server.reason != reason:
                    log.warning("MCP server %s is unavailable: %s", name, reason)
                server.available, server.reason = False, reason
                return
            server.tools = self._expose(name, server.config, listed)
            if not server.available:
                log.info("MCP server %s is available with %d tools", name, len(server.tools))
            server.available, server.reason = True, ""
            return

    @staticmethod
    def _expose(
        name: str, cfg: McpServerConfig, listed: list[Any]
    ) -> dict[str, tuple[McpTool, Any]]:
        exposed: dict[str, tuple[McpTool, Any]] = {}
        for tool in sorted(listed, key=lambda t: str(t.name)):
            full = f"{name}{SEPARATOR}{tool.name}"
            if not cfg.offers(tool.name):
                continue
            if not _TOOL_NAME.match(full):
                log.warning(
                    "MCP server %s: tool name %r is not usable; skipped",
                    name,
                    clip(str(tool.name), 80),
                )
                continue
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
            schema = schema or {"type": "object"}
            try:
                validator = linear_validator(schema)
            except jsonschema.SchemaError as exc:
                log.warning(
                    "MCP server %s: tool %s has an invalid input schema (%s); skipped",
                    name,
                    tool.name,
                    clip(exc.message, 200),
                )
                continue
            if len(exposed) >= cfg.max_tools:
                log.warning(
                    "MCP server %s lists more than %d tools; the rest are not offered",
                    name,
                    cfg.max_tools,
                )
                break
            description = " ".join(str(tool.description or "").split())
            exposed[full] = (
                McpTool(full, name, str(tool.name), clip(description, _MAX_DESCRIPTION), schema),
                validator,
            )
        return exposed

    # -- what the toolset sees ----------------------------------------------------------

    def tools(self, *, include_unavailable: bool = False) -> list[McpTool]:
        """Tools of the servers that answered their last refresh (or all known ones)."""
        return [
            tool
            for server in self._servers.values()
            if server.available or include_unavailable
            for tool, _ in server.tools.values()
        ]

    def status(self) -> dict[str, dict[str, Any]]:
        """Per server: available, why not, how many tools, breaker state."""
        return {
            name: {
                "available": s.available,
                "reason": s.reason,
                "tools": len(s.tools),
                "breaker": s.breaker.state,
                "calls_in_window": s.breaker.window_counts()[0],
            }
            for name, s in self._servers.items()
        }

    def check_arguments(self, name: str, arguments: Any) -> str | None:
        """Why `arguments` do not fit the exposed tool `name`'s input schema; None when they do."""
        server = self._servers.get(name.partition(SEPARATOR)[0])
        entry = server.tools.get(name) if server is not None else None
        if entry is None:
            return f"unknown tool {clip(name, 80)!r}"
        if not isinstance(arguments, dict):
            return f"arguments for {name} must be a JSON object"
        validator = entry[1]
        problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if not problems:
            return None
        shown = "; ".join(
            f"{_path(err) or '(arguments)'}: {clip(problem_text(err), 200)}"
            for err in problems[:_MAX_SCHEMA_ERRORS]
        )
        return f"arguments for {name} do not fit its input schema: {shown}; fix them and call again"

    def server_config(self, server: str) -> McpServerConfig:
        """The configuration of an enabled server (limits, allow list)."""
        return self._servers[server].config

    def servers(self) -> list[str]:
        """The enabled servers' names, sorted."""
        return list(self._servers)

    async def call(
        self, name: str, arguments: Any, *, timeout: float | None = None
    ) -> McpCallResult:
        """Call the exposed tool `name` with `arguments` (docs/internals.md).

        `timeout` (a toolset's per-call timeout) lowers the server's
        `timeoutSeconds` for this call; the caller's budget always does.
        """
        server_name, _, _ = name.partition(SEPARATOR)
        server = self._servers.get(server_name)
        entry = server.tools.get(name) if server is not None else None
        if server is None or entry is None:
            offered = ", ".join(t.name for t in self.tools()[:20]) or "none"
            raise McpToolError(f"unknown tool {clip(name, 80)!r}; the tools offered are: {offered}")
        tool = entry[0]
        problem = self.check_arguments(name, arguments)
        if problem is not None:
            raise McpToolError(problem)
        if not server.available or server.connection is None or not server.connection.alive:
            raise McpUnavailableError(
                f"MCP server {server_name!r} is unavailable ({server.reason or 'disconnected'}); "
                "it is retried at the next refresh"
            )
        conn = server.connection
        try:
            return await server.breaker.call(lambda: self._invoke(conn, tool, arguments, timeout))
        except CatalogUnavailableError as exc:
            # The breaker failed fast: the server was not called.
            raise McpUnavailableError(exc.message.replace("mcp_", "MCP server ", 1)) from None

    async def _invoke(
        self, conn: McpConnection, tool: McpTool, arguments: dict[str, Any], cap: float | None
    ) -> McpCallResult:
        cfg = conn.config
        limit = cfg.timeout_seconds if cap is None else min(cfg.timeout_seconds, cap)
        timeout = deadline.request_timeout(limit)
        try:
            async with asyncio.timeout(timeout):
                result = await conn.session.call_tool(tool.tool, arguments)
        except TimeoutError:
            budget = deadline.current_budget()
            if budget is not None and budget.remaining() <= _BUDGET_SLACK:
                raise BudgetExhaustedError(
                    f"the caller's deadline ran out waiting for MCP tool {tool.name}"
                ) from None
            raise McpUnavailableError(
                f"MCP tool {tool.name} did not answer within {timeout:.1f}s"
            ) from None
        except MCPError as exc:
            if exc.error.code == mcp_types.CONNECTION_CLOSED:
                conn.mark_dead()
                raise McpUnavailableError(
                    f"MCP server {conn.name!r} closed the connection during the call; "
                    "it is reconnected at the next refresh"
                ) from None
            # A protocol-level refusal: the server is up and said no.
            message = clip(redact(str(exc.error.message)), 500)
            return McpCallResult(
                conn.name, tool.tool, f"error {exc.error.code}: {message}", True, False
            )
        except McpUnavailableError:
            raise
        except Exception as exc:
            conn.mark_dead()
            raise McpUnavailableError(
                f"MCP server {conn.name!r} failed during the call ({type(exc).__name__}); "
                "it is reconnected at the next refresh"
            ) from None
        text = content_text(result)
        limit = cfg.max_output_chars
        return McpCallResult(
            conn.name,
            tool.tool,
            redact(clip(text, limit)),
            bool(getattr(result, "is_error", False)),
            len(text) > limit,
        )


def _path(err: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in err.absolute_path)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, McpUnavailableError):
        return exc.message
    if isinstance(exc, TimeoutError):
        return "listing its tools timed out"
    return cause(exc)
