"""Retries of AnalyzeIncident cost nothing: real gRPC servers, a scripted model, real Redis.

Calls for the same remediation_id and incident share one investigation while
it runs, get its kept result afterwards, and a different incident under the
same id is ALREADY_EXISTS unless the call forces a fresh analysis. With
Redis, replicas share both the lock and the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis.asyncio as aioredis
from google.protobuf import json_format
from prometheus_client import REGISTRY

from hapi.v1 import service_pb2, service_pb2_grpc
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.adapters.result_store import MemoryResultStore, RedisResultStore
from hapi_grpc.app import build_server
from hapi_grpc.application.idempotency import Finished, IdempotencyCoordinator
from hapi_grpc.application.service import idempotency_key
from hapi_grpc.config import Settings
from hapi_grpc.domain.fingerprint import incident_fingerprint
from hapi_grpc.transport import converters
from tests.fakes.clock import ManualClock
from tests.fakes.investigation import bundled_catalog
from tests.fakes.redis_server import running_redis
from tests.fakes.scripted_llm import ScriptedLLMServer, Step

EXAMPLES = Path(__file__).parents[2] / "examples"
OOM_REQUEST = (EXAMPLES / "oomkilled.json").read_text()
GOOD = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
TURNS = 2  # model requests of one investigation in SCRIPT
# Where the example's remediation id is kept: within its tenant (namespace, no caller).
KEY = idempotency_key(
    converters.incident_from_proto(
        json_format.Parse(OOM_REQUEST, service_pb2.AnalyzeIncidentRequest()).incident
    )
)
EVENTS = ["llm_turn", "tool_call", "llm_turn", "validation_attempt", "result"]


def request(
    message: str | None = None, *, force: bool = False
) -> service_pb2.AnalyzeIncidentRequest:
    req = json_format.Parse(OOM_REQUEST, service_pb2.AnalyzeIncidentRequest())
    if message is not None:
        req.incident.error_details.error_message = message
    req.force_reanalysis = force
    return req


def stream_request(
    req: service_pb2.AnalyzeIncidentRequest,
) -> service_pb2.AnalyzeIncidentStreamRequest:
    return service_pb2.AnalyzeIncidentStreamRequest(
        incident=req.incident, force_reanalysis=req.force_reanalysis
    )


def answer() -> str:
    return json.dumps(
        {
            "analysis_summary": "payment-api is repeatedly OOMKilled",
            "root_cause_assessment": "memory limit below the working set",
            "rca_severity": "critical",
            "selected_workflow": {
                "workflow_id": "oomkill-increase-memory-v1",
                "version": "1.0.0",
                "confidence": 0.9,
                "rationale": "steady growth to the limit",
                "estimated_risk": "low",
                "parameters": GOOD,
            },
            "alternative_workflows": [],
            "warnings": [],
        }
    )


def script(delay: float = 0.0, repeat: int = 3) -> list[Step]:
    """`repeat` investigations of one conversation: a search (after `delay`), then the answer."""
    one = [
        Step.tool_calls(
            [("search_workflow_catalog", {"query": "OOMKilled critical memory"})], delay=delay
        ),
        Step.text(answer()),
    ]
    return one * repeat


def reused(kind: str) -> float:
    return REGISTRY.get_sample_value("hapi_analyses_reused_total", {"kind": kind}) or 0.0


@contextlib.asynccontextmanager
async def serving(
    llm_server: ScriptedLLMServer,
    *,
    idempotency: IdempotencyCoordinator[Any] | None = None,
    **settings: Any,
) -> AsyncIterator[service_pb2_grpc.IncidentAnalysisServiceStub]:
    """A real server on loopback, answering with the scripted model, and a stub to it."""
    provider = OpenAICompatibleProvider(
        llm_server.base_url, "gpt-test", "sk-test-key-123", request_timeout=10.0, max_retries=0
    )
    config = Settings(**{"grpc_host": "127.0.0.1", "grpc_port": 0, "metrics_port": -1, **settings})
    # Idempotency mechanics: no cluster is read, so the workflows' premises are left out.
    server = build_server(
        config, llm=provider, idempotency=idempotency, catalog=bundled_catalog(declarations=False)
    )
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield service_pb2_grpc.IncidentAnalysisServiceStub(channel)
    finally:
        await channel.close()
        await server.stop(0)
        await provider.close()


async def stream_all(
    stub: service_pb2_grpc.IncidentAnalysisServiceStub,
    req: service_pb2.AnalyzeIncidentRequest,
) -> list[service_pb2.AnalyzeIncidentStreamResponse]:
    return [m async for m in stub.AnalyzeIncidentStream(stream_request(req), timeout=20)]


# -- one replica ------------------------------------------------------------------------------


async def test_concurrent_calls_share_one_investigation() -> None:
    async with (
        ScriptedLLMServer("openai", script(delay=0.5)) as llm,
        serving(llm) as stub,
    ):
        joined = reused("joined")
        unary = [stub.AnalyzeIncident(request(), timeout=20) for _ in range(5)]
        streams = [stream_all(stub, request()) for _ in range(2)]
        results = await asyncio.gather(*unary, *streams)

        assert len(llm.requests) == TURNS  # one model conversation for seven calls
        assert llm.conversation_count == 1
        finals = [r.result for r in results[:5]] + [s[-1].result for s in results[5:]]
        assert {f.selected_workflow.workflow_id for f in finals} == {"oomkill-increase-memory-v1"}
        assert sorted(f.reused for f in finals) == [False] + [True] * 6
        assert len({f.completed_at.ToNanoseconds() for f in finals}) == 1
        # The caller that ran it answers with the message the result was encoded
        # from; the others decode their own copies: the same result, apart from `reused`.
        for final in finals:
            final.reused = False
        assert all(f == finals[0] for f in finals)
        assert reused("joined") - joined == 6
        for events in results[5:]:
            # Joiners replay what happened before they joined: every event, then the result.
            assert [m.WhichOneof("event") for m in events] == EVENTS


async def test_the_unencoded_result_goes_to_one_caller_and_the_others_get_the_payload() -> None:
    # The caller that gets the message may change it (its stamp, its exposure):
    # no other caller, now or later, may get the same object.
    message = service_pb2.AnalyzeIncidentResponse()
    started = asyncio.Event()

    async def investigate(publish: Any) -> Finished:
        started.set()
        await asyncio.sleep(0.05)
        return Finished(b"encoded", True, message)

    coordinator: IdempotencyCoordinator[Any] = IdempotencyCoordinator(MemoryResultStore())
    first = asyncio.create_task(coordinator.run("rr-1", "f", investigate))
    await started.wait()
    joined = [asyncio.create_task(coordinator.run("rr-1", "f", investigate)) for _ in range(3)]
    outcomes = await asyncio.gather(first, *joined)
    later = await coordinator.run("rr-1", "f", investigate)  # from the store
    assert [o.message is message for o in outcomes].count(True) == 1
    assert [o.message for o in outcomes].count(None) == 3
    assert later.message is None and later.payload == b"encoded"
    assert {o.payload for o in outcomes} == {b"encoded"}


async def test_a_cancelled_caller_does_not_cancel_the_others() -> None:
    async with (
        ScriptedLLMServer("openai", script(delay=0.8)) as llm,
        serving(llm) as stub,
    ):
        leaving = stub.AnalyzeIncident(request(), timeout=20)
        staying = asyncio.ensure_future(stub.AnalyzeIncident(request(), timeout=20))
        assert await llm.wait_requests(1)
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving
        result = (await staying).result
        assert result.selected_workflow.workflow_id == "oomkill-increase-memory-v1"
        assert llm.aborted == 0
        assert len(llm.requests) == TURNS


async def test_the_investigation_stops_when_every_caller_left() -> None:
    async with (
        ScriptedLLMServer("openai", script(delay=20.0)) as llm,
        serving(llm) as stub,
    ):
        calls = [stub.AnalyzeIncident(request(), timeout=30) for _ in range(2)]
        tasks = [asyncio.ensure_future(c) for c in calls]
        assert await llm.wait_requests(1)
        for call in calls:
            call.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Cancellation reached the model request (it would otherwise run 20 s).
        assert await llm.wait_aborted(1, within=3.0)


async def test_a_retry_after_completion_returns_the_stored_result() -> None:
    async with (
        ScriptedLLMServer("openai", script()) as llm,
        serving(llm) as stub,
    ):
        stored = reused("stored")
        first = (await stub.AnalyzeIncident(request(), timeout=20)).result
        again = (await stub.AnalyzeIncident(request(), timeout=20)).result
        streamed = await stream_all(stub, request())

        assert len(llm.requests) == TURNS  # the retries sent nothing to the model
        assert not first.reused and again.reused
        assert again.completed_at == first.completed_at
        again.reused = False
        assert again == first  # the very same result
        # A stream of a kept result replays the investigation's events, then the result.
        assert [m.WhichOneof("event") for m in streamed] == EVENTS
        assert streamed[0].llm_turn.tool_calls == ["search_workflow_catalog"]
        assert streamed[-1].result.reused
        assert reused("stored") - stored == 2


async def test_a_different_incident_under_the_same_id_is_already_exists() -> None:
    async with (
        ScriptedLLMServer("openai", script()) as llm,
        serving(llm) as stub,
    ):
        await stub.AnalyzeIncident(request(), timeout=20)
        other = request("Container payment-api was OOMKilled; memory limit 1Gi")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.AnalyzeIncident(other, timeout=20)
        assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "rr-2026-11-22-oom-7f3a" in (refused.value.details() or "")
        assert "force_reanalysis" in (refused.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as streamed:
            await stream_all(stub, other)
        assert streamed.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert len(llm.requests) == TURNS

        # Forced: analysed afresh, and its result replaces the kept one.
        forced = (
            await stub.AnalyzeIncident(
                request(other.incident.error_details.error_message, force=True), timeout=20
            )
        ).result
        assert not forced.reused
        assert llm.conversation_count == 2
        assert (await stub.AnalyzeIncident(other, timeout=20)).result.reused
        with pytest.raises(grpc.aio.AioRpcError) as old:
            await stub.AnalyzeIncident(request(), timeout=20)
        assert old.value.code() == grpc.StatusCode.ALREADY_EXISTS


async def test_a_retry_with_updated_deduplication_counters_reuses_the_result() -> None:
    """A controller that rebuilds its request on a retry bumps last_seen and the count."""
    async with (
        ScriptedLLMServer("openai", script()) as llm,
        serving(llm) as stub,
    ):
        first = (await stub.AnalyzeIncident(request(), timeout=20)).result
        retry = request()
        retry.incident.deduplication.occurrence_count += 3
        retry.incident.deduplication.last_seen.seconds += 120
        again = (await stub.AnalyzeIncident(retry, timeout=20)).result
        assert again.reused and not first.reused
        assert llm.conversation_count == 1
        # Anything else that changes is another incident.
        moved = request()
        moved.incident.deduplication.is_duplicate = not moved.incident.deduplication.is_duplicate
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.AnalyzeIncident(moved, timeout=20)
        assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS


async def test_force_reanalysis_runs_the_same_incident_again() -> None:
    async with (
        ScriptedLLMServer("openai", script()) as llm,
        serving(llm) as stub,
    ):
        first = (await stub.AnalyzeIncident(request(), timeout=20)).result
        forced = (await stub.AnalyzeIncident(request(force=True), timeout=20)).result
        assert not forced.reused
        assert len(llm.requests) == 2 * TURNS
        assert forced.completed_at.ToNanoseconds() > first.completed_at.ToNanoseconds()
        again = (await stub.AnalyzeIncident(request(), timeout=20)).result
        assert again.reused and again.completed_at == forced.completed_at


async def test_results_expire_after_their_ttl() -> None:
    clock = ManualClock()
    coordinator: IdempotencyCoordinator[Any] = IdempotencyCoordinator(
        MemoryResultStore(clock=clock), result_ttl=60
    )
    async with (
        ScriptedLLMServer("openai", script()) as llm,
        serving(llm, idempotency=coordinator) as stub,
    ):
        await stub.AnalyzeIncident(request(), timeout=20)
        clock.advance(59.9)
        assert (await stub.AnalyzeIncident(request(), timeout=20)).result.reused
        clock.advance(0.1)
        assert not (await stub.AnalyzeIncident(request(), timeout=20)).result.reused
        assert len(llm.requests) == 2 * TURNS


async def test_a_zero_ttl_keeps_nothing() -> None:
    async with (
        ScriptedLLMServer("openai", script()) as llm,
        serving(llm, result_ttl_seconds=0) as stub,
    ):
        await stub.AnalyzeIncident(request(), timeout=20)
        assert not (await stub.AnalyzeIncident(request(), timeout=20)).result.reused
        assert len(llm.requests) == 2 * TURNS


async def test_an_unreachable_redis_costs_the_reuse_not_the_call() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    async with (
        ScriptedLLMServer("openai", script()) as llm,
        serving(llm, cache_url=f"redis://127.0.0.1:{port}/0") as stub,
    ):
        result = (await stub.AnalyzeIncident(request(), timeout=20)).result
        assert result.selected_workflow.workflow_id == "oomkill-increase-memory-v1"
        assert not result.reused


# -- replicas sharing Redis -------------------------------------------------------------------


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A private redis-server on a free loopback port, stopped afterwards."""
    with running_redis(tmp_path) as server:
        yield server.url


@pytest.mark.redis
async def test_two_replicas_run_one_investigation(redis_url: str) -> None:
    async with (
        ScriptedLLMServer("openai", script(delay=0.5)) as llm,
        serving(llm, cache_url=redis_url) as first,
        serving(llm, cache_url=redis_url) as second,
    ):
        awaited = reused("awaited")
        calls = [first.AnalyzeIncident(request(), timeout=20)]
        assert await llm.wait_requests(1)  # the first replica holds the lock
        calls += [second.AnalyzeIncident(request(), timeout=20) for _ in range(3)]
        results = [r.result for r in await asyncio.gather(*calls)]

        assert len(llm.requests) == TURNS
        assert [r.reused for r in results] == [False, True, True, True]
        # The second replica's three calls joined one wait for the first's result.
        assert reused("awaited") - awaited == 1
        assert len({r.completed_at.ToNanoseconds() for r in results}) == 1
        # Later retries on either replica get the result kept in Redis, events included.
        assert (await second.AnalyzeIncident(request(), timeout=20)).result.reused
        streamed = await stream_all(second, request())
        assert [m.WhichOneof("event") for m in streamed] == EVENTS
        client = aioredis.from_url(redis_url)
        try:
            key = f"hapi:analysis:result:{KEY}"
            assert 0 < await client.pttl(key) <= 900_000
            assert await client.exists(f"hapi:analysis:lock:{KEY}") == 0
        finally:
            await client.aclose()
        assert len(llm.requests) == TURNS


@pytest.mark.redis
async def test_the_lock_is_renewed_while_a_long_investigation_runs(redis_url: str) -> None:
    lock = f"hapi:analysis:lock:{KEY}"
    coordinator: IdempotencyCoordinator[Any] = IdempotencyCoordinator(
        RedisResultStore(redis_url), lock_ttl=0.6
    )
    client = aioredis.from_url(redis_url)
    try:
        async with (
            ScriptedLLMServer(
                "openai",
                [
                    Step.tool_calls(
                        [("search_workflow_catalog", {"query": "OOMKilled critical"})], delay=0.8
                    ),
                    Step.text(answer(), delay=0.8),
                ],
            ) as llm,  # 1.6 s in all, well past the lock's TTL
            serving(llm, idempotency=coordinator) as stub,
        ):
            call = asyncio.ensure_future(stub.AnalyzeIncident(request(), timeout=20))
            assert await llm.wait_requests(1)
            await asyncio.sleep(1.0)  # the lock would have expired at 0.6 s
            assert await client.exists(lock) == 1
            assert 0 < await client.pttl(lock) <= 600
            assert not (await call).result.reused
            assert await client.exists(lock) == 0  # released, not left to expire
            await asyncio.sleep(0.3)
            assert coordinator._renewer is not None and coordinator._renewer.done()
    finally:
        await client.aclose()


@pytest.mark.redis
async def test_a_dead_replicas_lock_blocks_only_until_it_expires(redis_url: str) -> None:
    req = request()
    fingerprint = incident_fingerprint(converters.incident_from_proto(req.incident))
    lock = f"hapi:analysis:lock:{KEY}"
    client = aioredis.from_url(redis_url)
    try:
        async with (
            ScriptedLLMServer("openai", script()) as llm,
            serving(llm, cache_url=redis_url) as stub,
        ):
            # Left behind by a replica that died mid-investigation of a different incident.
            await client.set(lock, "dead0000/" + "0" * 64, px=5000)
            with pytest.raises(grpc.aio.AioRpcError) as busy:
                await stub.AnalyzeIncident(req, timeout=5)
            assert busy.value.code() == grpc.StatusCode.ALREADY_EXISTS
            assert "retry once that analysis has finished" in (busy.value.details() or "")

            # ... of the same incident: this call waits for the lock to expire, then runs.
            await client.set(lock, f"dead0000/{fingerprint}", px=1500)
            started = time.monotonic()
            result = (await stub.AnalyzeIncident(req, timeout=20)).result
            waited = time.monotonic() - started
            assert not result.reused
            assert 1.0 < waited < 1.5 + 3.0  # the lock's TTL, plus a poll and the investigation
            assert len(llm.requests) == TURNS
            assert await client.exists(lock) == 0  # released when the investigation ended
    finally:
        await client.aclose()


@pytest.mark.redis
async def test_a_waiting_replica_gives_up_at_its_own_deadline(redis_url: str) -> None:
    req = request()
    fingerprint = incident_fingerprint(converters.incident_from_proto(req.incident))
    client = aioredis.from_url(redis_url)
    try:
        async with (
            ScriptedLLMServer("openai", script()) as llm,
            serving(llm, cache_url=redis_url) as stub,
        ):
            await client.set(f"hapi:analysis:lock:{KEY}", f"alive000/{fingerprint}", px=30_000)
            started = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as late:
                await stub.AnalyzeIncident(req, timeout=1.0)
            assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert time.monotonic() - started < 2.0
            assert llm.requests == []
    finally:
        await client.aclose()


async def test_a_storm_of_lookups_waits_for_a_pooled_connection(redis_url: str) -> None:
    """1,000 concurrent lookups all answer: beyond the pool they wait, they do not fail
    (with redis-py's default pool, 900 of them raised MaxConnectionsError and the
    replicas stopped sharing results during a storm)."""
    store = RedisResultStore(redis_url, op_timeout=2.0)
    try:
        answers = await asyncio.gather(
            *(store.get(f"storm-{i}") for i in range(1000)), return_exceptions=True
        )
    finally:
        await store.close()
    failures = [a for a in answers if isinstance(a, BaseException)]
    assert failures == []
    assert answers == [None] * 1000
