"""The Data Storage REST server, exercised over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.catalog.loader import CatalogFileError
from hapi_grpc.adapters.datastorage_server import (
    MAX_BODY_BYTES,
    create_app,
    run_datastorage_server,
)
from hapi_grpc.domain.catalog import SearchQuery, SearchResult, Workflow, WorkflowSchema

SEARCH = "/api/v1/workflows/search"
PROBLEM_KEYS = {"type", "title", "status", "detail", "instance"}


@pytest.fixture(scope="module")
def catalog() -> EmbeddedCatalog:
    return EmbeddedCatalog.from_file(None)


@pytest.fixture
async def client(catalog: EmbeddedCatalog) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    runner = web.AppRunner(create_app(catalog))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            yield session, f"http://{host}:{port}"
    finally:
        await runner.cleanup()


async def _problem(response: aiohttp.ClientResponse, status: int) -> dict[str, Any]:
    assert response.status == status
    assert response.content_type == "application/problem+json"
    body = await response.json(content_type=None)
    assert PROBLEM_KEYS <= set(body)
    assert body["status"] == status
    assert body["instance"] == response.url.path
    return body


def _has_none(value: Any) -> bool:
    if isinstance(value, dict):
        return any(v is None or _has_none(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_none(v) for v in value)
    return False


# ----------------------------------------------------------------------- search


async def test_search_returns_the_contract_shape(client: tuple[Any, str]) -> None:
    session, base = client
    body = {
        "query": "OOMKilled critical",
        "filters": {"signal_type": "OOMKilled", "severity": "critical"},
        "top_k": 5,
        "min_score": 0.7,
        "remediation_id": "req-2025-11-30-abc123",
    }
    async with session.post(base + SEARCH, json=body) as response:
        assert response.status == 200
        assert response.content_type == "application/json"
        data = await response.json()
    assert set(data) == {"workflows", "total_results"}
    top = data["workflows"][0]
    assert top["workflow_id"] == "oomkill-increase-memory-v1"
    assert top["confidence"] >= 0.9
    assert {"version", "title", "description", "signal_type", "estimated_duration"} <= set(top)
    assert data["total_results"] == len(data["workflows"])
    memory = next(p for p in top["parameters"] if p["name"] == "MEMORY_LIMIT_NEW")
    assert memory == {
        "name": "MEMORY_LIMIT_NEW",
        "type": "string",
        "required": True,
        "description": "New memory limit in Kubernetes quantity format (e.g. 512Mi, 2Gi)",
        "pattern": "^[0-9]+(Ki|Mi|Gi|Ti)$",
        "default": "512Mi",
        "depends_on": [],
    }
    assert not _has_none(data)


SEARCH_TABLE: list[dict[str, Any]] = [
    {"query": "OOMKilled critical"},
    {"query": "OOMKilled critical", "top_k": 1},
    {"query": "CrashLoopBackOff high liveness probe", "min_score": 0.0, "top_k": 10},
    {"query": "NodeNotReady critical", "filters": {"severity": "warning"}, "min_score": 0.1},
    {"query": "ImagePullBackOff", "filters": {"component": "deployment", "environment": "prod"}},
    {
        "query": "OOMKilled critical",
        "filters": {"custom_labels": {"constraint": ["cost-constrained"], "team": ["x"]}},
    },
    {"query": "CertificateNotReady", "filters": {"detected_labels": {"gitOpsManaged": False}}},
    {"query": "increase memory limit", "min_score": 0.3, "top_k": 10},
    {"query": "banana bread", "min_score": 0.0},
    {"query": "HighCPUThrottling", "filters": {"priority": "P0"}, "remediation_id": "r-1"},
]


@pytest.mark.parametrize("body", SEARCH_TABLE)
async def test_rest_search_equals_embedded_search(
    client: tuple[Any, str], catalog: EmbeddedCatalog, body: dict[str, Any]
) -> None:
    session, base = client
    async with session.post(base + SEARCH, json=body) as response:
        assert response.status == 200
        over_http = SearchResult.model_validate(await response.json())
    in_process = await catalog.search(SearchQuery.model_validate(body))
    assert over_http == in_process


async def test_search_accepts_the_wire_form_of_a_search_query(
    client: tuple[Any, str], catalog: EmbeddedCatalog
) -> None:
    session, base = client
    query = SearchQuery.model_validate(
        {
            "query": "OOMKilled critical",
            "filters": {"signal_type": "OOMKilled", "custom_labels": {"team": ["payments"]}},
            "remediation_id": "req-1",
        }
    )
    async with session.post(base + SEARCH, json=query.to_wire()) as response:
        over_http = SearchResult.model_validate(await response.json())
    assert over_http == await catalog.search(query)
    assert over_http.workflows


async def test_search_accepts_hyphenated_filter_keys(client: tuple[Any, str]) -> None:
    session, base = client
    body = {"query": "OOMKilled critical", "filters": {"signal-type": "CrashLoopBackOff"}}
    async with session.post(base + SEARCH, json=body) as response:
        data = await response.json()
    assert data["workflows"] == []


@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        (b"not json", "request body is not JSON"),
        (b"\xff\xfe", "request body is not JSON"),
        (b"[1, 2]", "request body must be a JSON object"),
        (b"{}", "query: Field required"),
        (b'{"query": ""}', "query: String should have at least 1 character"),
        (b'{"query": "x", "top_k": 11}', "top_k: Input should be less than or equal to 10"),
        (b'{"query": "x", "min_score": 1.5}', "min_score: Input should be less than or equal"),
        (
            b'{"query": "x", "filters": {"custom_labels": {"team": "payments"}}}',
            "filters.custom_labels.team: Input should be a valid tuple",
        ),
    ],
)
async def test_bad_search_bodies_get_400_problem(
    client: tuple[Any, str], payload: bytes, detail: str
) -> None:
    session, base = client
    headers = {"Content-Type": "application/json"}
    async with session.post(base + SEARCH, data=payload, headers=headers) as response:
        problem = await _problem(response, 400)
    assert problem["title"] == "Bad Request"
    assert detail in problem["detail"]


async def test_oversized_body_gets_413_problem(client: tuple[Any, str]) -> None:
    session, base = client
    payload = b'{"query": "' + b"x" * MAX_BODY_BYTES + b'"}'
    async with session.post(base + SEARCH, data=payload) as response:
        problem = await _problem(response, 413)
    assert "Maximum request body size" in problem["detail"]


# ------------------------------------------------------------ schema and record


async def test_schema_endpoint(client: tuple[Any, str], catalog: EmbeddedCatalog) -> None:
    session, base = client
    async with session.get(base + "/api/v1/workflows/oomkill-increase-memory-v1/schema") as r:
        assert r.status == 200
        assert r.content_type == "application/json"
        data = await r.json()
    # The optional declarations travel with the schema (preconditions, invariants,
    # read_only, the action type).
    assert set(data) == {
        "workflow_id",
        "version",
        "parameters",
        "preconditions",
        "invariants",
        "read_only",
        "action_type",
    }
    assert data["action_type"] == "IncreaseMemoryLimits"
    assert data["read_only"] is False and data["preconditions"] and data["invariants"]
    assert (data["workflow_id"], data["version"]) == ("oomkill-increase-memory-v1", "1.0.0")
    assert not _has_none(data)
    parsed = WorkflowSchema.model_validate(data)
    assert parsed == await catalog.get_schema("oomkill-increase-memory-v1")


async def test_schema_of_a_workflow_without_parameters(client: tuple[Any, str]) -> None:
    session, base = client
    async with session.get(base + "/api/v1/workflows/collect-cluster-diagnostics-v1/schema") as r:
        assert r.status == 200
        data = await r.json()
    assert data == {
        "workflow_id": "collect-cluster-diagnostics-v1",
        "version": "1.0.0",
        "parameters": [],
        "preconditions": [],
        "invariants": [],
        "read_only": True,
        "action_type": "CollectDiagnostics",
    }


async def test_workflow_endpoint_returns_the_whole_record(
    client: tuple[Any, str], catalog: EmbeddedCatalog
) -> None:
    session, base = client
    async with session.get(base + "/api/v1/workflows/fix-certificate-gitops-v1") as r:
        assert r.status == 200
        data = await r.json()
    assert data["labels"]["signal_type"] == "CertificateNotReady"
    assert data["labels"]["detected_labels"] == {"gitOpsManaged": True}
    assert [p["name"] for p in data["parameters"]] == ["TARGET_NAMESPACE", "TARGET_RESOURCE_NAME"]
    assert not _has_none(data)
    assert Workflow.model_validate(data) == await catalog.get_workflow("fix-certificate-gitops-v1")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/workflows/no-such-workflow",
        "/api/v1/workflows/no-such-workflow/schema",
        "/api/v1/workflows/..hidden/schema",
        "/api/v1/workflows/a%20b",
        "/api/v1/workflows/search",
    ],
)
async def test_unknown_or_unsafe_ids_get_404_problem(client: tuple[Any, str], path: str) -> None:
    session, base = client
    async with session.get(base + path) as response:
        problem = await _problem(response, 404)
    assert problem["title"] == "Not Found"
    assert "not found in the catalog" in problem["detail"]


async def test_unknown_route_and_wrong_method_get_problems(client: tuple[Any, str]) -> None:
    session, base = client
    async with session.get(base + "/api/v2/nothing") as response:
        problem = await _problem(response, 404)
    assert problem["detail"] == "no resource at /api/v2/nothing"
    async with session.put(base + SEARCH, json={}) as response:
        problem = await _problem(response, 405)
        assert "POST" in response.headers["Allow"]
    assert problem["detail"] == f"method PUT is not allowed for {SEARCH}"


async def test_healthz(client: tuple[Any, str], catalog: EmbeddedCatalog) -> None:
    session, base = client
    async with session.get(base + "/healthz") as response:
        assert response.status == 200
        assert await response.json() == {"status": "ok", "workflows": len(catalog)}


# ------------------------------------------------------------------ run server

_ADDRESS_RE = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


async def _wait_for_address(caplog: pytest.LogCaptureFixture, task: asyncio.Task[None]) -> str:
    for _ in range(500):
        for record in caplog.records:
            match = _ADDRESS_RE.search(record.getMessage())
            if match:
                return match.group(1)
        if task.done():
            task.result()
            raise AssertionError("server stopped before logging its address")
        await asyncio.sleep(0.01)
    raise AssertionError("server did not log its address within 5 s")


async def test_run_serves_a_catalog_file_until_cancelled(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hapi_grpc.adapters.datastorage_server")
    path = tmp_path / "catalog.yaml"
    record = {"workflow_id": "only-v1", "version": "1.0.0", "title": "Only", "signal_type": "X"}
    path.write_text(yaml.safe_dump({"workflows": [record]}), encoding="utf-8")
    sigterm_before = signal.getsignal(signal.SIGTERM)

    task = asyncio.create_task(run_datastorage_server(str(path), "127.0.0.1", 0))
    address = await _wait_for_address(caplog, task)
    startup = next(r.getMessage() for r in caplog.records if "listening on" in r.getMessage())
    assert f"1 workflows from {path}" in startup
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        async with session.get(address + "/api/v1/workflows/only-v1/schema") as response:
            assert await response.json() == {
                "workflow_id": "only-v1",
                "version": "1.0.0",
                "parameters": [],
                "preconditions": [],
                "invariants": [],
                "read_only": False,
                "action_type": "",
            }
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(address + "/healthz")
    assert signal.getsignal(signal.SIGTERM) == sigterm_before  # handlers removed


async def test_run_stops_on_sigterm(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hapi_grpc.adapters.datastorage_server")
    task = asyncio.create_task(run_datastorage_server(None, "127.0.0.1", 0))
    address = await _wait_for_address(caplog, task)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        async with session.get(address + "/healthz") as response:
            assert (await response.json())["workflows"] >= 15
    # Only signal ourselves when the server's handler is in place; the default
    # action would end the test process.
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(task, 10)
    assert any("stopping" in r.getMessage() for r in caplog.records)


async def test_run_refuses_a_bad_catalog_before_binding(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("workflows: [{workflow_id: x}]\n", encoding="utf-8")
    with pytest.raises(CatalogFileError, match=r"entry #0 \(x\): version: Field required"):
        await run_datastorage_server(str(path), "127.0.0.1", 0)
