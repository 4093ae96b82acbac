"""MCP toolsets end to end: AnalyzeIncident(Stream), a scripted model and real MCP servers
(written with the SDK, tests/fakes/mcp_servers.py) over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2
from prometheus_client import REGISTRY

from hapi.v1 import tools_pb2
from hapi_grpc.config import ConfigError, Settings
from hapi_grpc.toolsets.registry import open_toolsets
from tests.fakes.mcp_servers import start_http_server, stdio_config
from tests.fakes.prometheus_server import free_port
from tests.fakes.scripted_llm import Step
from tests.toolsets.conftest import final_answer, request, serving, write_mcp_config

SUCCESS = tools_pb2.TOOL_CALL_STATUS_SUCCESS
INVALID = tools_pb2.TOOL_CALL_STATUS_INVALID_ARGUMENTS
ERROR = tools_pb2.TOOL_CALL_STATUS_ERROR
ALLOWED = ["get_runbook", "scale", "hang", "crash", "huge", "fail"]


def ops(**keys: Any) -> dict[str, Any]:
    return stdio_config(allowedTools=ALLOWED, timeoutSeconds=2, maxOutputChars=5000, **keys)


async def test_discovery_offers_the_allowed_tools_with_their_schemas(tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {"ops": ops(deniedTools=["fail"])})
    async with serving([final_answer()], mcp_config=config) as served:
        await served.stub.AnalyzeIncident(request(), timeout=60)
        system = served.system_prompt()
        tools = {t["function"]["name"]: t["function"] for t in served.requests[0].json["tools"]}

    mcp_tools = sorted(name for name in tools if name.startswith("ops__"))
    assert mcp_tools == ["ops__crash", "ops__get_runbook", "ops__hang", "ops__huge", "ops__scale"]
    scale = tools["ops__scale"]["parameters"]
    assert scale["properties"]["replicas"]["maximum"] == 10  # the server's own JSON Schema
    assert "ops__get_runbook" in system and "tool_server_data" in system
    assert "delete_everything" not in json.dumps(tools) + system


async def test_a_call_end_to_end_is_recorded_with_server_tool_and_arguments(
    tmp_path: Path,
) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {"ops": ops()})
    script = [
        Step.tool_calls([("ops__get_runbook", {"name": "KubePodOOMKilled"})]),
        final_answer(),
    ]
    async with serving(script, mcp_config=config) as served:
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
        (shown,) = served.tool_results()

    assert shown["tool_server_data"]["content"].startswith("Runbook for KubePodOOMKilled")
    (call,) = result.tool_calls
    assert call.status == SUCCESS and call.name == "ops__get_runbook"
    assert call.WhichOneof("arguments") == "mcp_tool"
    assert (call.mcp_tool.server, call.mcp_tool.tool) == ("ops", "get_runbook")
    assert json_format.MessageToDict(call.mcp_tool.arguments) == {"name": "KubePodOOMKilled"}
    assert json.loads(call.raw_arguments) == {"name": "KubePodOOMKilled"}


async def test_arguments_outside_the_schema_are_refused_before_the_call(tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {"ops": ops()})
    script = [
        Step.tool_calls([("ops__scale", {"deployment": "api", "replicas": 50})]),
        Step.tool_calls([("ops__scale", {"deployment": "api", "replicas": 3})]),
        final_answer(),
    ]
    async with serving(script, mcp_config=config) as served:
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
    rejected, accepted = result.tool_calls
    assert rejected.status == INVALID
    assert "replicas: 50 is greater than the maximum of 10" in rejected.result
    assert "fix them and call again" in rejected.result
    assert accepted.status == SUCCESS and "would scale api to 3" in accepted.result


async def test_a_hanging_server_costs_its_timeout_not_the_investigation(tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {"ops": ops()})
    script = [Step.tool_calls([("ops__hang", {})]), final_answer()]
    async with serving(script, mcp_config=config) as served:
        started = time.monotonic()
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
        took = time.monotonic() - started
    (call,) = result.tool_calls
    assert call.status == ERROR and "did not answer within" in call.result
    assert "go on without them" in call.result
    assert 1.5 < call.duration_seconds < 4  # timeoutSeconds=2
    assert took < 15 and result.analysis_summary == "memory climbed to the limit"


async def test_a_server_dying_mid_call_makes_its_tools_unavailable(tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {"ops": ops()})
    script = [
        Step.tool_calls([("ops__crash", {})]),
        Step.tool_calls([("ops__get_runbook", {"name": "x"})]),
        final_answer(),
    ]
    async with serving(script, mcp_config=config, mcp_refresh_seconds=0) as served:
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
    crashed, after = result.tool_calls
    assert crashed.status == ERROR and "unavailable" in crashed.result
    assert after.status == ERROR and "unavailable" in after.result
    assert result.analysis_summary == "memory climbed to the limit"


async def test_a_huge_result_is_capped(tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {"ops": ops()})
    script = [Step.tool_calls([("ops__huge", {"size": 1_000_000})]), final_answer()]
    async with serving(script, mcp_config=config) as served:
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
        sent = len(json.dumps(served.requests[-1].json))
    (call,) = result.tool_calls
    assert call.status == SUCCESS
    assert len(call.result) < 5000 + 600  # maxOutputChars plus the wrapper
    assert "cut to the server's output cap" in call.result
    assert sent < 40_000  # the model never got the megabyte


async def test_the_stream_carries_the_mcp_tool_calls(tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json", {"ops": ops()})
    script = [
        Step.tool_calls([("ops__get_runbook", {"name": "KubePodOOMKilled"})]),
        final_answer(),
    ]
    async with serving(script, mcp_config=config) as served:
        events = [e async for e in served.stub.AnalyzeIncidentStream(request(), timeout=60)]
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[-1] == "result"
    calls = [e.tool_call for e in events if e.WhichOneof("event") == "tool_call"]
    assert [(c.name, c.mcp_tool.server, c.mcp_tool.tool) for c in calls] == [
        ("ops__get_runbook", "ops", "get_runbook")
    ]
    assert kinds.index("tool_call") < kinds.index("result")


def _samples(name: str) -> list[dict[str, str]]:
    return [
        dict(s.labels) for family in REGISTRY.collect() for s in family.samples if s.name == name
    ]


async def test_metrics_name_only_allow_listed_tools(tmp_path: Path) -> None:
    http = start_http_server(free_port())
    port = http.args[3]
    try:
        servers = {
            "ops": ops(),
            "open": {"url": f"http://127.0.0.1:{port}/mcp", "deniedTools": ["delete_everything"]},
        }
        config = write_mcp_config(tmp_path / "mcp.json", servers)
        script = [
            Step.tool_calls(
                [
                    ("ops__get_runbook", {"name": "a"}),
                    ("open__get_runbook", {"name": "b"}),
                    ("open__whoami", {}),
                    ("no_such_tool", {}),
                ]
            ),
            final_answer(),
        ]
        async with serving(script, mcp_config=config) as served:
            result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
    finally:
        http.terminate()
        http.wait(timeout=10)
    assert [c.status for c in result.tool_calls][:3] == [SUCCESS] * 3
    labels = _samples("hapi_toolset_calls_total")
    assert {"toolset": "mcp:ops", "tool": "ops__get_runbook", "status": "success"} in labels
    assert {"toolset": "mcp:open", "tool": "other", "status": "success"} in labels
    assert {"toolset": "none", "tool": "unknown", "status": "unknown_tool"} in labels
    tools = {d["tool"] for d in labels} | {
        d["tool"] for d in _samples("hapi_toolset_call_errors_total")
    }
    assert not any(t.startswith("open__") for t in tools)  # not allow-listed: never a label
    durations = _samples("hapi_toolset_call_duration_seconds_count")
    assert {"toolset": "mcp:open", "tool": "other"} in durations


async def test_an_unreachable_server_neither_fails_startup_nor_readiness(tmp_path: Path) -> None:
    servers = {
        "gone": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
        "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(1)"]},
    }
    config = write_mcp_config(tmp_path / "mcp.json", servers)
    async with serving([final_answer()], mcp_config=config) as served:
        health = await served.health.Check(
            health_pb2.HealthCheckRequest(service="hapi.v1.IncidentAnalysisService"), timeout=5
        )
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
        system, offered = served.system_prompt(), served.offered()
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert result.analysis_summary == "memory climbed to the limit"
    assert offered == ["search_workflow_catalog", "validate_workflow_parameters"]
    assert "gone" not in system and "broken" not in system


async def test_a_malformed_config_is_a_configuration_error(tmp_path: Path) -> None:
    bad = write_mcp_config(tmp_path / "mcp.json", {"ops": {"command": "x", "alowedTools": []}})
    with pytest.raises(ConfigError, match=r"^HAPI_MCP_CONFIG: .*server 'ops', key 'alowedTools'"):
        await open_toolsets(Settings(mcp_config=bad))


def test_serve_exits_2_with_one_line_for_a_malformed_config(tmp_path: Path) -> None:
    bad = tmp_path / "mcp.json"
    bad.write_text("{not json")
    env = {
        **os.environ,
        "HAPI_MCP_CONFIG": str(bad),
        "HAPI_KUBERNETES": "off",
        "HAPI_GRPC_PORT": "0",
        "HAPI_METRICS_PORT": "-1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "hapi_grpc.cli", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hapi-grpc: HAPI_MCP_CONFIG:")
    assert "not valid JSON" in lines[0]
