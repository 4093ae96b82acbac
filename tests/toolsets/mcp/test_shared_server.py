"""McpManager over one stdio server shared by the tests that leave it healthy."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from hapi_grpc.domain.investigation.observer import NO_OBSERVER
from hapi_grpc.domain.llm import ToolCall
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.dispatcher import ToolDispatcher
from hapi_grpc.toolsets.mcp.manager import McpManager
from hapi_grpc.toolsets.mcp.tools import McpToolError, McpToolsetSource
from tests.fakes.mcp_servers import stdio_config
from tests.toolsets.mcp.conftest import manager_for

# One event loop and one set of server processes for the whole module: starting
# a Python MCP server costs seconds.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager() -> AsyncIterator[McpManager]:
    async with manager_for(
        {
            "ops": stdio_config(
                deniedTools=["delete_everything", "crash", "hang"], maxOutputChars=1000, maxCalls=2
            ),
            "books": stdio_config(allowedTools=["get_runbook", "no_such_tool"]),
        }
    ) as started:
        yield started


async def test_discovery_filters_allowed_and_denied_tools(manager: McpManager) -> None:
    names = {t.name for t in manager.tools()}
    status = manager.status()
    assert "ops__get_runbook" in names and "ops__scale" in names
    assert not {"ops__delete_everything", "ops__crash", "ops__hang"} & names
    assert {n for n in names if n.startswith("books__")} == {"books__get_runbook"}
    assert status["ops"]["available"] and status["books"]["tools"] == 1


async def test_call_end_to_end_and_tool_errors(manager: McpManager) -> None:
    (scale,) = [t for t in manager.tools() if t.name == "ops__scale"]
    ok = await manager.call("ops__get_runbook", {"name": "KubePodOOMKilled"})
    failed = await manager.call("ops__fail", {})
    structured = await manager.call("ops__scale", {"deployment": "api", "replicas": 3})
    # The server's own JSON Schema is what the model sees.
    assert scale.input_schema["properties"]["replicas"]["maximum"] == 10
    assert scale.input_schema["required"] == ["deployment", "replicas"]
    assert "Pretend to scale" in scale.description
    assert ok.text.startswith("Runbook for KubePodOOMKilled") and not ok.is_error
    assert failed.is_error and "the backing system said no" in failed.text
    assert structured.text == "would scale api to 3 (safe)"


async def test_arguments_are_checked_against_the_schema_before_calling(
    manager: McpManager,
) -> None:
    calls_before = manager.status()["ops"]["calls_in_window"]
    with pytest.raises(McpToolError) as too_many:
        await manager.call("ops__scale", {"deployment": "api", "replicas": 50})
    with pytest.raises(McpToolError) as missing:
        await manager.call("ops__scale", {"replicas": 2, "mode": "reckless"})
    with pytest.raises(McpToolError, match="must be a JSON object"):
        await manager.call("ops__scale", ["api", 2])
    with pytest.raises(McpToolError, match=r"unknown tool 'ops__nope'.*ops__get_runbook"):
        await manager.call("ops__nope", {})
    with pytest.raises(McpToolError, match="unknown tool"):
        await manager.call("ops__delete_everything", {})
    with pytest.raises(McpToolError, match="unknown tool"):
        await manager.call("elsewhere__scale", {})
    assert "replicas: 50 is greater than the maximum of 10" in too_many.value.message
    assert "fix them and call again" in too_many.value.message
    assert "(arguments): 'deployment' is a required property" in missing.value.message
    assert "mode: 'reckless' is not one of ['fast', 'safe']" in missing.value.message
    # None of them reached the server.
    assert manager.status()["ops"]["calls_in_window"] == calls_before


async def test_huge_result_is_capped(manager: McpManager) -> None:
    result = await manager.call("ops__huge", {"size": 1_000_000})
    assert result.truncated
    assert result.text.startswith("x" * 1000)
    assert len(result.text) < 1100 and "999000 more characters cut" in result.text


async def _runbook_calls(manager: McpManager, calls: list[str]) -> list[ToolCallStatus]:
    """One investigation's calls to the servers' toolsets, each with its own arguments."""
    toolsets = [McpToolsetSource(manager, server)(Caller()) for server in ("ops", "books")]
    dispatcher = ToolDispatcher(toolsets, NO_OBSERVER)
    statuses = []
    for i, name in enumerate(calls):
        call = ToolCall(id=str(i), name=name, arguments=f'{{"name": "r{i}"}}')
        statuses.append((await dispatcher.run(call)).record.status)
    return statuses


async def test_call_cap_per_investigation(manager: McpManager) -> None:
    ops, books = "ops__get_runbook", "books__get_runbook"
    statuses = await _runbook_calls(manager, [ops, ops, ops, books])
    # maxCalls 2 for `ops`; the other server, and another investigation, count their own.
    assert statuses == [ToolCallStatus.SUCCESS] * 2 + [
        ToolCallStatus.LIMIT_EXCEEDED,
        ToolCallStatus.SUCCESS,
    ]
    assert await _runbook_calls(manager, [ops]) == [ToolCallStatus.SUCCESS]
