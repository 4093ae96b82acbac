"""Graceful shutdown over a real grpc.aio server and channel, with a real model server.

Once shutdown begins, hapi.v1 calls (new, or queued in the server but not yet
started) are answered UNAVAILABLE, which callers retry on another replica,
never CANCELLED; running investigations answer with their partial result
inside the grace; health and reflection keep answering while the server drains.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from hapi.v1 import analysis_pb2, service_pb2, validation_pb2
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.transport.admission import SHUTTING_DOWN
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import RunningServer, running_server

OOM_REQUEST = (Path(__file__).parents[2] / "examples" / "oomkilled.json").read_text()
BUDGET_EXHAUSTED = analysis_pb2.HUMAN_REVIEW_REASON_BUDGET_EXHAUSTED
GRACE = 2.0


def slow_model() -> ScriptedLLMServer:
    """Every model turn takes far longer than the grace: only the drain ends it."""
    return ScriptedLLMServer("openai", [Step.text("{}", delay=30.0)] * 200, per_conversation=False)


def analyze_request() -> service_pb2.AnalyzeIncidentRequest:
    request = json_format.Parse(OOM_REQUEST, service_pb2.AnalyzeIncidentRequest())
    request.incident.remediation_id = f"rr-{uuid.uuid4().hex[:12]}"
    return request


def provider(llm: ScriptedLLMServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=60.0, max_retries=0
    )


async def outcome(call: Awaitable[Any]) -> tuple[grpc.StatusCode, Any, float]:
    """(code, response or error details, seconds the call took)."""
    started = time.monotonic()
    try:
        reply = await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details(), time.monotonic() - started
    return grpc.StatusCode.OK, reply, time.monotonic() - started


def assert_partial_result(code: grpc.StatusCode, reply: Any) -> None:
    assert code == grpc.StatusCode.OK, (code, reply)
    assert reply.result.needs_human_review
    assert reply.result.human_review_reason == BUDGET_EXHAUSTED


async def test_calls_after_shutdown_began_are_unavailable_and_in_flight_ones_answer() -> None:
    async with (
        slow_model() as llm,
        running_server(llm=provider(llm)) as srv,
    ):
        in_flight = [
            asyncio.ensure_future(outcome(srv.stub.AnalyzeIncident(analyze_request(), timeout=30)))
            for _ in range(4)
        ]
        assert await llm.wait_requests(4, within=10)
        began = time.monotonic()
        stopping = srv.server.stop(grace=GRACE)
        await asyncio.sleep(0.05)

        late = await asyncio.gather(
            *(outcome(srv.stub.AnalyzeIncident(analyze_request(), timeout=10)) for _ in range(10)),
            outcome(_read_stream(srv)),
            outcome(
                srv.stub.ValidateWorkflowParameters(
                    validation_pb2.ValidateWorkflowParametersRequest(workflow_id="x"), timeout=10
                )
            ),
        )
        for code, details, seconds in late:
            assert code == grpc.StatusCode.UNAVAILABLE, (code, details)
            assert details == SHUTTING_DOWN
            assert seconds < 1.0  # answered at once, not when the grace ends
        # The server is still draining; probes and reflection still answer.
        assert not stopping.done()
        health = await srv.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
        assert health.status == health_pb2.HealthCheckResponse.NOT_SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        listing = [
            reply
            async for reply in reflection.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=2
            )
        ]
        services = {s.name for s in listing[0].list_services_response.service}
        assert "hapi.v1.IncidentAnalysisService" in services

        for code, reply, _ in await asyncio.gather(*in_flight):
            assert_partial_result(code, reply)
        await asyncio.wait_for(stopping, GRACE + 2)
        # Stopped as soon as nothing was in flight, inside the grace.
        assert time.monotonic() - began < GRACE


async def _read_stream(srv: RunningServer) -> list[Any]:
    request = service_pb2.AnalyzeIncidentStreamRequest(incident=analyze_request().incident)
    return [event async for event in srv.stub.AnalyzeIncidentStream(request, timeout=10)]


class StopOnFirstCall(grpc.aio.ServerInterceptor):
    """Begins the server's shutdown when the first hapi.v1 call is handed over,
    while the rest of a burst is still queued in the server."""

    def __init__(self) -> None:
        self.stop: Callable[[], asyncio.Task[None]] | None = None
        self.stopping: asyncio.Task[None] | None = None

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if (
            self.stop is not None
            and self.stopping is None
            and handler_call_details.method.startswith("/hapi.v1.")
        ):
            self.stopping = self.stop()
        return await continuation(handler_call_details)


async def test_calls_queued_when_shutdown_begins_are_unavailable_not_cancelled() -> None:
    trigger = StopOnFirstCall()
    async with (
        slow_model() as llm,
        running_server(llm=provider(llm), extra_interceptors=[trigger]) as srv,
    ):
        trigger.stop = lambda: srv.server.stop(grace=GRACE)
        burst = await asyncio.gather(
            *(outcome(srv.stub.AnalyzeIncident(analyze_request(), timeout=30)) for _ in range(100))
        )
        assert trigger.stopping is not None
        await asyncio.wait_for(trigger.stopping, GRACE + 2)

    codes = [code for code, _, _ in burst]
    assert grpc.StatusCode.CANCELLED not in codes
    assert codes.count(grpc.StatusCode.UNAVAILABLE) > 50, codes
    for code, reply, _ in burst:
        if code == grpc.StatusCode.OK:  # started before the gate closed
            assert_partial_result(code, reply)
        else:
            assert (code, reply) == (grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)


async def test_an_idle_server_stops_at_once_whatever_the_grace() -> None:
    async with running_server() as srv:
        reply = await srv.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=2)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        began = time.monotonic()
        await asyncio.wait_for(srv.server.stop(grace=30.0), 5)
        assert time.monotonic() - began < 1.0
