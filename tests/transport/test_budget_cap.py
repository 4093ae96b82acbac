"""HAPI_MAX_BUDGET_SECONDS through the real server: a caller's longer deadline
(or none at all) never lengthens an investigation past the configured maximum."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from google.protobuf import json_format

from hapi.v1 import analysis_pb2, service_pb2
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server

OOM_REQUEST = (Path(__file__).parents[2] / "examples" / "oomkilled.json").read_text()
BUDGET_EXHAUSTED = analysis_pb2.HUMAN_REVIEW_REASON_BUDGET_EXHAUSTED
CAP = 1.5


def analyze_request() -> service_pb2.AnalyzeIncidentRequest:
    request = json_format.Parse(OOM_REQUEST, service_pb2.AnalyzeIncidentRequest())
    request.incident.remediation_id = f"rr-{uuid.uuid4().hex[:12]}"
    return request


def slow_model() -> ScriptedLLMServer:
    """Every model turn takes far longer than the cap."""
    return ScriptedLLMServer("openai", [Step.text("{}", delay=30.0)] * 50, per_conversation=False)


def provider(llm: ScriptedLLMServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=60.0, max_retries=0
    )


async def test_a_longer_deadline_is_capped_at_the_maximum_budget() -> None:
    async with (
        slow_model() as llm,
        running_server(llm=provider(llm), max_budget_seconds=CAP) as srv,
    ):
        started = time.monotonic()
        reply = await srv.stub.AnalyzeIncident(analyze_request(), timeout=60)
        took = time.monotonic() - started
        stream = service_pb2.AnalyzeIncidentStreamRequest(incident=analyze_request().incident)
        started = time.monotonic()
        frames = [f async for f in srv.stub.AnalyzeIncidentStream(stream, timeout=60)]
        streamed = time.monotonic() - started
    assert reply.result.needs_human_review
    assert reply.result.human_review_reason == BUDGET_EXHAUSTED
    assert CAP - 0.5 < took < CAP + 2.0, took
    assert frames[-1].result.human_review_reason == BUDGET_EXHAUSTED
    assert streamed < CAP + 2.0, streamed


async def test_without_a_deadline_the_default_is_capped_too() -> None:
    async with (
        slow_model() as llm,
        running_server(
            llm=provider(llm), default_budget_seconds=600.0, max_budget_seconds=CAP
        ) as srv,
    ):
        started = time.monotonic()
        reply = await asyncio.wait_for(srv.stub.AnalyzeIncident(analyze_request()), CAP + 10)
        took = time.monotonic() - started
    assert reply.result.human_review_reason == BUDGET_EXHAUSTED
    assert took < CAP + 2.0, took


async def test_a_shorter_deadline_still_wins() -> None:
    async with (
        slow_model() as llm,
        running_server(llm=provider(llm), max_budget_seconds=60.0) as srv,
    ):
        started = time.monotonic()
        reply = await srv.stub.AnalyzeIncident(analyze_request(), timeout=CAP)
        took = time.monotonic() - started
    assert reply.result.human_review_reason == BUDGET_EXHAUSTED
    assert took < CAP + 0.5, took
