"""Unlucky dependencies: fake Data Storage and model servers with switchable faults.

Both are aiohttp servers on 127.0.0.1 speaking the real contracts, meant to be
pointed at by a real `hapi-grpc serve` process through its settings:

- `FaultyDataStorage` serves the bundled catalog over the Data Storage REST
  contract (the application `hapi-grpc datastorage serve` runs) behind a fault
  middleware.
- `FaultyModel` speaks OpenAI chat completions and plays, for every
  conversation, the three turns of a normal investigation: search the catalog
  (with a query made unique per request so each search reaches Data Storage
  instead of the cache), validate parameters, answer. The turn is derived from
  the number of tool results in the request, so it needs no per-conversation
  state. Requests are checked like the real API checks them (400 otherwise).

`fault` applies to every request until changed: `Fault.OK` answers normally;
the others are what an unlucky dependency does (hang past any deadline, 5xx,
429 with Retry-After, a garbage body, a 50 MB body, a TCP reset).
`kill()` and `restart()` stop and restart the listener on the same port.
`open_requests` counts handlers still running, which shows whether the server
stopped its downstream work once its caller went away.
"""

from __future__ import annotations

import asyncio
import enum
import json
import socket
import struct
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from hapi_grpc.adapters.datastorage_server import create_app
from tests.fakes.investigation import bundled_catalog
from tests.fakes.scripted_llm import openai_request_problem

WORKFLOW_ID = "oomkill-increase-memory-v1"
HUGE_BODY_BYTES = 50 * 1024 * 1024
HANG_SECONDS = 600.0

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Fault(enum.Enum):
    OK = "ok"
    HANG = "hang"
    SERVER_ERROR = "5xx"
    RATE_LIMITED = "429"
    GARBAGE = "garbage"
    HUGE_BODY = "50MB-body"
    RESET = "reset"


FAULTS = tuple(f for f in Fault if f is not Fault.OK)


class _FaultyServer:
    """Listener lifecycle, fault switch and request accounting shared by both fakes."""

    def __init__(self) -> None:
        self.fault = Fault.OK
        self.turn_delay = 0.0  # seconds added to every healthy answer
        self.requests = 0
        self.open_requests = 0
        self.max_open = 0  # most requests open at once
        self.aborted = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    def _app(self) -> web.Application:
        raise NotImplementedError

    async def start(self) -> None:
        runner = web.AppRunner(
            self._app(), handler_cancellation=True, access_log=None, shutdown_timeout=0.2
        )
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        self.port = runner.addresses[0][1]
        self._runner = runner

    async def kill(self) -> None:
        """Stop listening and drop every open connection."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def restart(self) -> None:
        await self.kill()
        await self.start()

    async def __aenter__(self) -> _FaultyServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.kill()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def wait_idle(self, within: float) -> bool:
        """True once no handler is running (downstream work stopped) within `within` s."""
        loop = asyncio.get_running_loop()
        end = loop.time() + within
        # Polling keeps the request path free of bookkeeping; 50 ms is plenty.
        while self.open_requests and loop.time() < end:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        return self.open_requests == 0

    @web.middleware
    async def _middleware(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        self.requests += 1
        self.open_requests += 1
        self.max_open = max(self.max_open, self.open_requests)
        try:
            fault = self.fault
            if fault is Fault.OK:
                if self.turn_delay:
                    await asyncio.sleep(self.turn_delay)
                return await handler(request)
            await request.read()
            return await _play_fault(request, fault)
        except asyncio.CancelledError:
            self.aborted += 1
            raise
        finally:
            self.open_requests -= 1


async def _play_fault(request: web.Request, fault: Fault) -> web.StreamResponse:
    if fault is Fault.HANG:
        await asyncio.sleep(HANG_SECONDS)
        return web.Response(status=504)
    if fault is Fault.SERVER_ERROR:
        return web.Response(status=503, text="upstream overloaded", content_type="text/plain")
    if fault is Fault.RATE_LIMITED:
        return web.json_response(
            {"error": {"message": "rate limited", "type": "rate_limit_error"}},
            status=429,
            headers={"Retry-After": "1"},
        )
    if fault is Fault.GARBAGE:
        return web.Response(
            status=200, body=b'{"workflows": [{"\xff\xfe<html>', content_type="application/json"
        )
    if fault is Fault.HUGE_BODY:
        return await _huge(request)
    if fault is Fault.RESET:
        _reset(request)
        return web.Response()
    raise AssertionError(fault)


async def _huge(request: web.Request) -> web.StreamResponse:
    """A 200 announcing and (if read) sending a 50 MB JSON document."""
    chunk = b" " * (1024 * 1024)
    head, tail = b'{"padding": "', b'"}'
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.content_length = HUGE_BODY_BYTES
    await response.prepare(request)
    await response.write(head)
    remaining = HUGE_BODY_BYTES - len(head) - len(tail)
    while remaining > 0:  # bounded: 50 chunks
        piece = chunk[: min(len(chunk), remaining)]
        await response.write(piece)
        remaining -= len(piece)
    await response.write(tail)
    return response


def _reset(request: web.Request) -> None:
    """Close the connection with a TCP RST (linger 0) instead of a FIN."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class FaultyDataStorage(_FaultyServer):
    """The Data Storage contract over the bundled catalog, with faults."""

    def __init__(self) -> None:
        super().__init__()
        # Failure handling is under test, not the workflows' premises (nothing is read
        # from a cluster behind this catalog): the bundled workflows with a premise
        # that always holds.
        self._catalog = bundled_catalog(declarations=False)

    def _app(self) -> web.Application:
        app = create_app(self._catalog)
        app.middlewares.insert(0, self._middleware)
        return app

    @property
    def url(self) -> str:
        return self.root


class FaultyModel(_FaultyServer):
    """An OpenAI-compatible model that investigates every incident in three turns."""

    def __init__(self, *, api_key: str = "") -> None:
        super().__init__()
        self.api_key = api_key
        self.bad_requests: list[str] = []  # what the real API would have refused
        self.conversations = 0  # first turns seen: investigations that reached the model
        self.unauthorized = 0

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=32 * 1024 * 1024, middlewares=[self._middleware])
        app.router.add_post("/v1/chat/completions", self._complete)
        return app

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    async def wait_conversations(self, count: int, within: float) -> bool:
        """True once `count` investigations have reached the model, waiting at most `within` s."""
        loop = asyncio.get_running_loop()
        end = loop.time() + within
        while self.conversations < count and loop.time() < end:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        return self.conversations >= count

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        if self.api_key and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            self.unauthorized += 1
            return _openai_error(401, "invalid api key")
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.bad_requests.append("body is not a JSON object")
            return _openai_error(400, "body is not a JSON object")
        problem = openai_request_problem(body)
        if problem:
            self.bad_requests.append(problem)
            return _openai_error(400, problem)
        messages = body["messages"]
        results = [m for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
        if not results:
            self.conversations += 1
        return web.json_response(_completion(body.get("model", ""), _turn(len(results))))


def _turn(done: int) -> dict[str, Any]:
    """The assistant message after `done` tool results."""
    if done == 0:
        query = f"OOMKilled critical memory {uuid.uuid4().hex[:12]}"
        return _tool_call("search_workflow_catalog", {"query": query})
    if done == 1:
        return _tool_call(
            "validate_workflow_parameters",
            {"workflow_id": WORKFLOW_ID, "parameters": ANSWER_PARAMETERS},
        )
    return {"role": "assistant", "content": json.dumps(ANSWER)}


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {
        "id": f"call_{uuid.uuid4().hex[:16]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def _openai_error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error", "code": None}},
        status=status,
    )


ANSWER_PARAMETERS = {
    "NAMESPACE": "payments",
    "DEPLOYMENT_NAME": "payment-api",
    "MEMORY_LIMIT_NEW": "1Gi",
}
ANSWER = {
    "analysis_summary": "payment-api is repeatedly OOMKilled",
    "root_cause_assessment": "memory limit below the working set",
    "rca_severity": "critical",
    "selected_workflow": {
        "workflow_id": WORKFLOW_ID,
        "version": "1.0.0",
        "confidence": 0.9,
        "rationale": "steady growth to the limit",
        "estimated_risk": "low",
        "parameters": ANSWER_PARAMETERS,
    },
    "alternative_workflows": [],
    "warnings": [],
    "context_used": {"cluster_state": "", "resource_availability": "", "blast_radius": ""},
}
