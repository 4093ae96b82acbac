"""McpManager against servers that hang, die, refuse or are missing (stdio and HTTP)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import psutil
import pytest

from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError
from hapi_grpc.toolsets.mcp.tools import McpToolError, McpUnavailableError
from tests.fakes.mcp_servers import stdio_config
from tests.fakes.prometheus_server import free_port
from tests.toolsets.mcp.conftest import HttpMcp, manager_for


async def test_hang_times_out_then_the_breaker_opens() -> None:
    def breaker(name: str) -> RateCircuitBreaker:
        return RateCircuitBreaker(name, failure_ratio=0.5, min_calls=3, recovery_timeout=60)

    async with manager_for({"ops": stdio_config(timeoutSeconds=0.5)}, breaker) as manager:
        started = time.monotonic()
        with pytest.raises(McpUnavailableError, match=r"did not answer within 0\.5s"):
            await manager.call("ops__hang", {})
        elapsed = time.monotonic() - started
        # The session survives a timed-out call.
        after = await manager.call("ops__get_runbook", {"name": "x"})
        # Our own deadline running out is not the server's fault: not counted.
        with budget_scope(Budget.from_timeout(0.2)), pytest.raises(BudgetExhaustedError):
            await manager.call("ops__hang", {})
        assert manager.status()["ops"]["calls_in_window"] == 2
        # A toolset's per-call timeout lowers the server's own.
        with pytest.raises(McpUnavailableError, match=r"within 0\.2s"):
            await manager.call("ops__hang", {}, timeout=0.2)
        # 2 of 3 calls failed: open. The next call is refused without reaching the server.
        with pytest.raises(McpUnavailableError, match="circuit breaker open") as fast:
            await manager.call("ops__get_runbook", {"name": "x"})
        status = manager.status()["ops"]
    assert elapsed < 2.0
    assert after.text.startswith("Runbook for x")
    assert "MCP server ops" in fast.value.message and "was not called" in fast.value.message
    assert status["breaker"] == "open" and status["calls_in_window"] == 3


async def test_death_mid_call_then_recovery_and_clean_close() -> None:
    async with manager_for({"ops": stdio_config()}, refresh_interval=0.5) as manager:
        before = await manager.call("ops__whoami", {})
        with pytest.raises(McpUnavailableError, match="closed the connection during the call"):
            await manager.call("ops__crash", {})
        with pytest.raises(McpUnavailableError, match="retried at the next refresh"):
            await manager.call("ops__whoami", {})
        # The background refresh reconnects it (a new process: seconds on a busy machine).
        for _ in range(300):
            if manager.status()["ops"]["available"] and "ops__whoami" in {
                t.name for t in manager.tools()
            }:
                try:
                    after = await manager.call("ops__whoami", {})
                    break
                except McpUnavailableError:
                    pass
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the background refresh did not reconnect the server within 30s")
    assert before.text != after.text  # a new server process answered
    pid = int(after.text.split()[0].removeprefix("pid="))
    for _ in range(50):  # close() stops the server process
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail(f"the stdio server {pid} is still running after close()")


async def test_unreachable_servers_are_reported_not_raised() -> None:
    async with manager_for(
        {
            "missing": {"command": "/nonexistent/mcp-server"},
            "closed": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
        },
        connect_timeout=5.0,
    ) as manager:
        status = manager.status()
        names = [t.name for t in manager.tools()]
        with pytest.raises(McpToolError, match="unknown tool"):
            await manager.call("missing__anything", {})
    assert not status["missing"]["available"] and status["missing"]["reason"]
    assert not status["closed"]["available"]
    assert names == []


async def test_streamable_http_with_token_and_headers(http_mcp: HttpMcp, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(http_mcp.token + "\n")
    async with manager_for(
        {
            "remote": {
                "url": http_mcp.url,
                "tokenFile": str(token),
                "headers": {"X-Tenant": "team-a"},
                "deniedTools": ["crash"],
            }
        }
    ) as manager:
        names = {t.name for t in manager.tools()}
        result = await manager.call("remote__get_runbook", {"name": "HighErrorRate"})
        seen = await manager.call("remote__seen_headers", {})
    assert "remote__scale" in names and "remote__crash" not in names
    assert result.text.startswith("Runbook for HighErrorRate")
    # The server demands the token, so the calls prove it was sent; the echo of it
    # in the tool's output is hidden like every registered secret.
    assert '"authorization": "Bearer [REDACTED]"' in seen.text and "team-a" in seen.text
    assert http_mcp.token not in seen.text


async def test_streamable_http_wrong_token_is_unavailable(
    http_mcp: HttpMcp, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("not-the-right-token\n")
    async with manager_for(
        {"remote": {"url": http_mcp.url, "tokenFile": str(token)}}, connect_timeout=5.0
    ) as manager:
        status = manager.status()["remote"]
    assert not status["available"]
    assert "not-the-right-token" not in status["reason"]
