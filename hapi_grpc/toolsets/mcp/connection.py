"""One open session with one MCP server, stdio or streamable HTTP.

Design notes: docs/internals.md (`toolsets/mcp/connection.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import AsyncExitStack
from typing import Any

import httpx2
import mcp_types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from hapi_grpc.domain.sensitive import clip, redact, register_secret
from hapi_grpc.toolsets.mcp.config import McpServerConfig
from hapi_grpc.toolsets.mcp.tools import McpUnavailableError

log = logging.getLogger(__name__)

__all__ = ["McpConnection", "cause", "read_token"]

# A listing is paged; more pages than this is a server that never stops.
MAX_LIST_PAGES = 10
CLOSE_TIMEOUT = 5.0


def read_token(path: str) -> str:
    """The bearer token in `path` (re-read at every connect), registered as a secret."""
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read(64 * 1024).strip()
    except OSError as exc:
        raise McpUnavailableError(
            f"cannot read the bearer token file ({exc.strerror or type(exc).__name__})"
        ) from None
    if not token:
        raise McpUnavailableError("the bearer token file is empty")
    register_secret(token, owner=f"MCP bearer token file {path}")  # a rotated one replaces it
    return token


def cause(exc: BaseException) -> str:
    """A short, secret-free reason: the first leaf of exception groups, HTTP statuses."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, MCPError):
        return f"MCP error {exc.error.code}: {clip(redact(str(exc.error.message)), 200)}"
    return type(exc).__name__


class McpConnection:
    """A session with the server `name`, opened by `open()` and closed by `close()`."""

    def __init__(self, name: str, config: McpServerConfig) -> None:
        self.name = name
        self.config = config
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._dead = False

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._dead and not self._closing.is_set()

    def mark_dead(self) -> None:
        self._dead = True

    def _transport(self) -> Any:
        cfg = self.config
        if cfg.command is not None:
            params = StdioServerParameters(
                command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None, cwd=cfg.cwd
            )
            return stdio_client(params)
        headers = dict(cfg.headers)
        if cfg.token_file:
            headers["Authorization"] = f"Bearer {read_token(cfg.token_file)}"
        assert cfg.url is not None
        # Our own deadlines bound every call; these only stop a dead socket from lingering.
        client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(cfg.timeout_seconds, read=cfg.timeout_seconds + 5),
            trust_env=False,
        )
        return _http_transport(cfg.url, client)

    async def open(self, timeout: float) -> None:
        """Connect and initialize within `timeout` seconds, or raise McpUnavailableError."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._task = asyncio.create_task(self._run(ready), name=f"mcp-{self.name}")
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            await self.close()
            raise McpUnavailableError(
                f"MCP server {self.name!r} did not start within {timeout:.1f}s"
            ) from None
        except McpUnavailableError:
            await self.close()
            raise
        except Exception as exc:
            await self.close()
            verb = "started" if self.config.transport == "stdio" else "reached"
            raise McpUnavailableError(
                f"MCP server {self.name!r} could not be {verb} ({cause(exc)})"
            ) from None

    async def _run(self, ready: asyncio.Future[None]) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self._session = session
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:  # reported through `ready` or the log
            if not ready.done():
                ready.set_exception(
                    exc
                    if isinstance(exc, Exception)
                    else McpUnavailableError(f"MCP server {self.name!r} connection was cancelled")
                )
            elif not self._closing.is_set():
                log.warning("MCP server %s connection ended: %s", self.name, type(exc).__name__)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._session = None
            self._dead = True

    @property
    def session(self) -> ClientSession:
        if self._session is None or not self.alive:
            raise McpUnavailableError(
                f"MCP server {self.name!r} is not connected; it is retried at the next refresh"
            )
        return self._session

    async def list_tools(self) -> list[Any]:
        """Every tool the server lists (bounded by MAX_LIST_PAGES pages)."""
        session = self.session
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            if cursor is None:
                result = await session.list_tools()
            else:
                params = mcp_types.PaginatedRequestParams(cursor=cursor)
                result = await session.list_tools(params=params)
            tools.extend(result.tools)
            cursor = result.next_cursor
            if not cursor or len(tools) >= self.config.max_tools * 4:
                break
        return tools

    async def close(self) -> None:
        """Close the session and stop the server process (stdio), bounded in time."""
        self._closing.set()
        task, self._task = self._task, None
        if task is None or task.done():
            return
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await asyncio.shield(task)
        except (TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, CLOSE_TIMEOUT)


@contextlib.asynccontextmanager
async def _http_transport(url: str, client: httpx2.AsyncClient) -> Any:
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams
