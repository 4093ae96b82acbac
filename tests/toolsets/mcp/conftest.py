"""Helpers for the MCP client tests: managers over the SDK-written servers in tests/fakes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.toolsets.mcp.config import parse_mcp_config
from hapi_grpc.toolsets.mcp.manager import McpManager
from tests.fakes.mcp_servers import start_http_server
from tests.fakes.prometheus_server import free_port


@asynccontextmanager
async def manager_for(
    servers: dict[str, Any],
    breaker_factory: Callable[[str], RateCircuitBreaker] | None = None,
    connect_timeout: float = 15.0,
    refresh_interval: float = 0.0,
) -> AsyncIterator[McpManager]:
    """A started manager over `servers` (no background refresh unless asked), closed afterwards."""
    config = parse_mcp_config({"mcpServers": servers})
    manager = McpManager(
        config,
        refresh_interval=refresh_interval,
        connect_timeout=connect_timeout,
        breaker_factory=breaker_factory,
    )
    await manager.start()
    try:
        yield manager
    finally:
        await manager.close()


class HttpMcp:
    def __init__(self, token: str) -> None:
        self.port = free_port()
        self.token = token
        self.process = start_http_server(self.port, token)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def http_mcp() -> Iterator[HttpMcp]:
    server = HttpMcp("http-test-token-123456")
    try:
        yield server
    finally:
        server.stop()
