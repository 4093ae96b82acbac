"""The `hapi-grpc` command line against a real server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.fakes.first_hit_model import FirstHitModel
from tests.fakes.investigation import wire_catalog
from tests.helpers.grpc_server import running_server

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).with_name("hapi-grpc"))


async def run_cli(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    environ = None
    if env is not None:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("HAPI_")}
        environ.update(env)
    proc = await asyncio.create_subprocess_exec(
        EXE,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=environ,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_analyze_prints_a_readable_result_and_json() -> None:
    async with running_server(catalog=wire_catalog(), llm=FirstHitModel()) as srv:
        code, out, _ = await run_cli("analyze", "examples/oomkilled.json", "--address", srv.address)
        assert code == 0
        assert "workflow:    oomkill-scale-down-v1" in out
        assert '"REPLICA_COUNT": 1' in out
        code, out, _ = await run_cli(
            "analyze", "examples/oomkilled.json", "--address", srv.address, "--json"
        )
        assert code == 0
        result = json.loads(out)["result"]
        assert result["selectedWorkflow"]["workflowId"] == "oomkill-scale-down-v1"
        assert result["remediationId"] == "rr-2026-11-22-oom-7f3a"


async def test_analyze_stream_prints_events_then_the_result() -> None:
    async with running_server(catalog=wire_catalog(), llm=FirstHitModel()) as srv:
        code, out, _ = await run_cli(
            "analyze", "examples/nodenotready.json", "--address", srv.address, "--stream"
        )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("[turn 1]")
    assert any(line.startswith("[tool] search_workflow_catalog") for line in lines)
    assert any(line.startswith("[validation #1]") for line in lines)
    assert any(line.startswith("workflow:") for line in lines)


async def test_invalid_request_is_refused_before_sending() -> None:
    code, _, err = await run_cli(
        "analyze", "examples/invalid-empty-remediation-id.json", "--address", "127.0.0.1:1"
    )
    assert code == 2
    assert "incident.remediation_id: value is required" in err


async def test_connection_failure_is_reported_clearly() -> None:
    code, _, err = await run_cli(
        "analyze", "examples/oomkilled.json", "--address", "127.0.0.1:1", "--timeout", "3"
    )
    assert code == 1
    assert "UNAVAILABLE" in err or "cannot reach" in err


async def test_validate_reports_errors_and_stripped_parameters() -> None:
    async with running_server(catalog=wire_catalog(), llm=FirstHitModel()) as srv:
        params = json.dumps(
            {
                "NAMESPACE": "payments",
                "DEPLOYMENT_NAME": "api",
                "MEMORY_LIMIT_NEW": "2 gigabytes",
                "GIT_PASSWORD": "hunter2",
            }
        )
        code, out, _ = await run_cli(
            "validate", "oomkill-increase-memory-v1", "-", "--address", srv.address, stdin=params
        )
        assert code == 3
        assert "INVALID" in out
        assert "MEMORY_LIMIT_NEW" in out
        assert "stripped undeclared parameters: GIT_PASSWORD" in out
        assert "hunter2" not in out
        code, _, err = await run_cli(
            "validate", "no-such-workflow", "-", "--address", srv.address, stdin="{}"
        )
        assert code == 1
        assert "NOT_FOUND" in err


async def test_catalog_check(tmp_path: Path) -> None:
    code, out, _ = await run_cli("catalog", "check", "hapi_grpc/data/catalog.yaml")
    assert code == 0 and "workflows OK" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("- workflow_id: x\n", encoding="utf-8")
    code, _, err = await run_cli("catalog", "check", str(bad))
    assert code == 1
    assert str(bad) in err


async def test_serve_refuses_a_malformed_catalog(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflows: [{workflow_id: '../x', version: '1', title: t}]\n", encoding="utf-8")
    code, _, err = await run_cli(
        "serve", "--port", "0", "--metrics-port", "-1", "--catalog", str(bad)
    )
    assert code == 2
    assert str(bad) in err and "entry #0" in err


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"HAPI_DATA_STORAGE_URL": "ftp://ds.example/"},
            "HAPI_DATA_STORAGE_URL: must be a URL with scheme http:// or https:// and a host",
        ),
        (
            {
                "HAPI_LLM_PROVIDER": "openai",
                "HAPI_LLM_MODEL": "m",
                "HAPI_LLM_BASE_URL": "ftp://llm.example/v1",
            },
            "HAPI_LLM_BASE_URL: must be a URL with scheme http:// or https:// and a host",
        ),
        (
            {"HAPI_CACHE_URL": "memcached://cache:11211", "HAPI_DATA_STORAGE_URL": "http://ds"},
            "HAPI_CACHE_URL: must be a URL with scheme memory://, redis:// or rediss://",
        ),
        ({"HAPI_GRPC_PORT": "fifty"}, "HAPI_GRPC_PORT: Input should be a valid integer"),
        ({"HAPI_MAX_CONCURRENT_RPCS": "0"}, "HAPI_MAX_CONCURRENT_RPCS: Input should be greater"),
        ({"HAPI_LLM_PROVIDER": "gemini"}, "HAPI_LLM_PROVIDER: Input should be 'builtin'"),
        ({"HAPI_LOG_FORMAT": "xml"}, "HAPI_LOG_FORMAT: Input should be 'json' or 'text'"),
        ({"HAPI_REFLECTION": "perhaps"}, "HAPI_REFLECTION: must be true or false"),
        (
            {"HAPI_CATALOG_FILE": "/nonexistent/catalog.yaml"},
            "HAPI_CATALOG_FILE: cannot read /nonexistent/catalog.yaml",
        ),
        (
            {
                "HAPI_LLM_PROVIDER": "anthropic",
                "HAPI_LLM_MODEL": "m",
                "HAPI_LLM_API_KEY_FILE": "/nonexistent/key",
            },
            "HAPI_LLM_API_KEY_FILE: cannot read /nonexistent/key",
        ),
        ({"HAPI_KUBERNETES": "maybe"}, "HAPI_KUBERNETES: Input should be 'auto', 'on' or 'off'"),
        (
            {"HAPI_KUBERNETES_CALL_TIMEOUT": "soon"},
            "HAPI_KUBERNETES_CALL_TIMEOUT: Input should be a valid number",
        ),
        (
            # Required but absent: no service account, KUBECONFIG names no file.
            {
                "HAPI_KUBERNETES": "on",
                "KUBECONFIG": "/nonexistent/kubeconfig",
                "HOME": "/nonexistent",
                "KUBERNETES_SERVICE_HOST": "",
            },
            "HAPI_KUBERNETES=on but no in-cluster or KUBECONFIG credentials",
        ),
    ],
)
async def test_configuration_mistakes_exit_2_with_one_line(
    env: dict[str, str], expected: str
) -> None:
    code, out, err = await run_cli(
        "serve", env={"HAPI_GRPC_PORT": "0", "HAPI_METRICS_PORT": "-1", **env}
    )
    assert code == 2
    assert "Traceback" not in err + out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert expected in lines[0]
    assert lines[0].startswith("hapi-grpc: ")
