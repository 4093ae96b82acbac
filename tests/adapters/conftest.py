"""Fixtures: a fault-injecting fake Data Storage and a throwaway redis-server.

The fake speaks the REST contract over real HTTP on 127.0.0.1. Each endpoint
("search", "schema", "workflow") has a queue of scripted behaviours; when the
queue is empty the endpoint answers from its canned catalog. Every request is
logged with its raw (undecoded) path, and requests whose client went away
mid-flight are counted as aborted.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.fakes.redis_server import RedisServer, running_redis

Behaviour = Callable[[web.Request], Awaitable[web.StreamResponse]]

WORKFLOW_ID = "oomkill-increase-memory-v1"

PARAMETERS = [
    {
        "name": "MEMORY_LIMIT_NEW",
        "type": "string",
        "required": True,
        "description": "New memory limit in Kubernetes quantity format",
        "pattern": "^[0-9]+(Ki|Mi|Gi|Ti)$",
    },
    {"name": "REPLICAS", "type": "integer", "minimum": 1, "maximum": 10},
]

WORKFLOW = {
    "workflow_id": WORKFLOW_ID,
    "version": "1.0.0",
    "title": "OOMKill remediation - increase memory limit",
    "description": "Raise the memory limit of the OOMKilled container.",
    "signal_type": "OOMKilled",
    "labels": {
        "signal_type": "OOMKilled",
        "severity": "critical",
        "component": "deployment",
        "environment": "*",
        "priority": "*",
        "custom_labels": {"constraint": ["cost-constrained"]},
    },
    "parameters": PARAMETERS,
    "estimated_duration": "2m",
    "success_rate": 0.87,
    "estimated_risk": "low",
}


def search_payload(confidence: float = 0.92) -> dict[str, Any]:
    hit = {
        k: WORKFLOW[k]
        for k in ("workflow_id", "version", "title", "description", "signal_type", "success_rate")
    }
    hit.update(confidence=confidence, estimated_duration="2m")
    return {"workflows": [hit], "total_results": 1}


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str  # raw, still percent-encoded
    endpoint: str  # search | schema | workflow | other
    body: Any
    at: float = field(default_factory=time.monotonic)


class FakeDataStorage:
    """Scriptable Data Storage stand-in; see the module docstring."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.aborted: list[Seen] = []
        self.aborted_event = asyncio.Event()
        self.workflows: dict[str, dict[str, Any]] = {WORKFLOW_ID: dict(WORKFLOW)}
        self.search_answer: dict[str, Any] = search_payload()
        self._scripts: dict[str, deque[Behaviour]] = {
            "search": deque(),
            "schema": deque(),
            "workflow": deque(),
        }
        self.url = ""
        self._runner: web.AppRunner | None = None

    # -- scripting --------------------------------------------------------------

    def script(self, endpoint: str, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests to `endpoint`, in order."""
        self._scripts[endpoint].extend(behaviours)

    def count(self, endpoint: str | None = None) -> int:
        return sum(1 for r in self.requests if endpoint in (None, r.endpoint))

    # Behaviour factories. A behaviour is an aiohttp handler.

    def ok(self, payload: Any = None) -> Behaviour:
        async def behaviour(request: web.Request) -> web.StreamResponse:
            if payload is None:
                return await self._default(request)
            return web.json_response(payload)

        return behaviour

    @staticmethod
    def status(
        code: int,
        *,
        title: str | None = None,
        detail: str | None = None,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> Behaviour:
        """An error status with an RFC 7807 body (or the raw `body` given)."""

        async def behaviour(request: web.Request) -> web.StreamResponse:
            if body is not None:
                return web.Response(status=code, body=body, headers=headers)
            problem = {
                "type": "about:blank",
                "title": title or "Error",
                "status": code,
                "detail": detail or "",
                "instance": request.path,
            }
            return web.Response(
                status=code,
                text=json.dumps(problem),
                content_type="application/problem+json",
                headers=headers,
            )

        return behaviour

    @staticmethod
    def raw(body: bytes, content_type: str = "application/json", code: int = 200) -> Behaviour:
        async def behaviour(request: web.Request) -> web.StreamResponse:
            return web.Response(status=code, body=body, headers={"Content-Type": content_type})

        return behaviour

    def slow(self, seconds: float, then: Behaviour | None = None) -> Behaviour:
        async def behaviour(request: web.Request) -> web.StreamResponse:
            await asyncio.sleep(seconds)
            return await (then or self.ok())(request)

        return behaviour

    @staticmethod
    def drop() -> Behaviour:
        """Close the connection before sending anything."""

        async def behaviour(request: web.Request) -> web.StreamResponse:
            assert request.transport is not None
            request.transport.close()
            return web.Response()

        return behaviour

    @staticmethod
    def truncated(payload: Any | None = None) -> Behaviour:
        """Announce the whole body, send a tenth of it, close the connection."""

        async def behaviour(request: web.Request) -> web.StreamResponse:
            body = json.dumps(payload or search_payload()).encode()
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.content_length = len(body)
            await resp.prepare(request)
            await resp.write(body[: len(body) // 10])
            assert request.transport is not None
            request.transport.close()
            return resp

        return behaviour

    # -- server -----------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # handler_cancellation: a client that goes away cancels the handler,
        # which is how the fake notices aborted requests.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw_path = request.raw_path.split("?", 1)[0]
        endpoint = _endpoint(request.method, raw_path)
        body: Any = None
        if request.can_read_body:
            body = json.loads(await request.read() or b"null")
        seen = Seen(request.method, request.raw_path, endpoint, body)
        self.requests.append(seen)
        script = self._scripts.get(endpoint)
        behaviour = script.popleft() if script else self.ok()
        try:
            return await behaviour(request)
        except asyncio.CancelledError:
            self.aborted.append(seen)
            self.aborted_event.set()
            raise

    async def _default(self, request: web.Request) -> web.StreamResponse:
        raw_path = request.raw_path.split("?", 1)[0]
        endpoint = _endpoint(request.method, raw_path)
        if endpoint == "search":
            return web.json_response(self.search_answer)
        if endpoint in ("schema", "workflow"):
            workflow_id = request.match_info["tail"].split("/")[3]
            wf = self.workflows.get(workflow_id)
            if wf is None:
                return await self.status(404, title="Not Found", detail="no such workflow")(request)
            if endpoint == "schema":
                return web.json_response(
                    {
                        "workflow_id": wf["workflow_id"],
                        "version": wf["version"],
                        "parameters": wf["parameters"],
                    }
                )
            return web.json_response(wf)
        return await self.status(404, title="Not Found")(request)


def _endpoint(method: str, raw_path: str) -> str:
    parts = raw_path.split("/")  # '', 'api', 'v1', 'workflows', ...
    if parts[:4] != ["", "api", "v1", "workflows"]:
        return "other"
    if method == "POST" and parts[4:] == ["search"]:
        return "search"
    if method == "GET" and len(parts) == 6 and parts[5] == "schema":
        return "schema"
    if method == "GET" and len(parts) == 5:
        return "workflow"
    return "other"


@pytest.fixture
async def ds() -> AsyncIterator[FakeDataStorage]:
    fake = FakeDataStorage()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


# -- Redis ------------------------------------------------------------------------


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A private redis-server on a free loopback port, stopped afterwards."""
    with running_redis(tmp_path) as server:
        yield server
