"""Tracing: server spans continue the caller's trace, nesting, errors, and the off switch."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.observability import tracing
from hapi_grpc.observability.logging import JsonFormatter

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN_ID}-01"


def _current_trace_id() -> str:
    span_context = trace.get_current_span().get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else ""


def _logged_trace_id() -> str:
    record = logging.LogRecord("test", logging.INFO, __file__, 0, "echo", None, None)
    return str(json.loads(JsonFormatter().format(record)).get("trace_id", ""))


async def _echo_trace(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    """Answers with the trace id seen by OpenTelemetry and by a log line."""
    with tracing.span("work", step="one"):
        # A task started by the handler stays in the same trace.
        await asyncio.create_task(_child_work())
    return f"{_current_trace_id()}|{_logged_trace_id()}".encode()


async def _child_work() -> None:
    with tracing.span("child", query="OOMKilled critical"):
        await asyncio.sleep(0)


async def _fail(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    await context.abort(grpc.StatusCode.INTERNAL, "boom")
    raise AssertionError("unreachable")


async def _reject(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad input")
    raise AssertionError("unreachable")


async def _crash(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    raise RuntimeError("unexpected")


async def _stream(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    for i in range(3):
        with tracing.span("chunk", index=i):
            yield str(i).encode()


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exp = InMemorySpanExporter()
    tracing.setup_tracing(True, service_name="hapi-test", exporter=exp)
    yield exp
    tracing.setup_tracing(False)


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    server = grpc.aio.server(interceptors=[tracing.TracingInterceptor()])
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(_echo_trace),
        "Fail": grpc.unary_unary_rpc_method_handler(_fail),
        "Reject": grpc.unary_unary_rpc_method_handler(_reject),
        "Crash": grpc.unary_unary_rpc_method_handler(_crash),
        "Stream": grpc.unary_stream_rpc_method_handler(_stream),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Svc", handlers),))
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    await server.stop(None)


async def test_server_span_continues_incoming_trace(
    exporter: InMemorySpanExporter, channel: grpc.aio.Channel
) -> None:
    answer = await channel.unary_unary("/test.Svc/Echo")(
        b"", metadata=(("traceparent", TRACEPARENT), ("tracestate", "k=v")), timeout=5
    )

    assert answer.decode() == f"{TRACE_ID}|{TRACE_ID}"
    spans = {s.name: s for s in exporter.get_finished_spans()}
    server = spans["test.Svc/Echo"]
    assert server.kind is SpanKind.SERVER
    assert format(server.context.trace_id, "032x") == TRACE_ID
    assert server.context.trace_state.get("k") == "v"
    assert format(server.parent.span_id, "016x") == PARENT_SPAN_ID
    assert server.parent.is_remote
    assert server.attributes["rpc.system"] == "grpc"
    assert server.attributes["rpc.service"] == "test.Svc"
    assert server.attributes["rpc.method"] == "Echo"
    assert server.attributes["rpc.grpc.status_code"] == 0
    assert server.status.status_code is StatusCode.UNSET
    assert server.resource.attributes["service.name"] == "hapi-test"


async def test_nested_spans_parent_correctly(
    exporter: InMemorySpanExporter, channel: grpc.aio.Channel
) -> None:
    await channel.unary_unary("/test.Svc/Echo")(b"", timeout=5)

    spans = {s.name: s for s in exporter.get_finished_spans()}
    server, work, child = spans["test.Svc/Echo"], spans["work"], spans["child"]
    assert server.parent is None  # no incoming context: a new trace starts here
    assert work.parent.span_id == server.context.span_id
    assert child.parent.span_id == work.context.span_id
    assert {s.context.trace_id for s in (server, work, child)} == {server.context.trace_id}
    assert work.attributes["step"] == "one"
    assert child.attributes["query"] == "OOMKilled critical"


async def test_status_codes_mark_server_faults_only(
    exporter: InMemorySpanExporter, channel: grpc.aio.Channel
) -> None:
    expected = (
        ("Fail", grpc.StatusCode.INTERNAL),
        ("Reject", grpc.StatusCode.INVALID_ARGUMENT),
        ("Crash", grpc.StatusCode.UNKNOWN),
    )
    for method, code in expected:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await channel.unary_unary(f"/test.Svc/{method}")(b"", timeout=5)
        assert err.value.code() is code

    spans = {s.name: s for s in exporter.get_finished_spans()}
    failed, rejected = spans["test.Svc/Fail"], spans["test.Svc/Reject"]
    assert failed.attributes["rpc.grpc.status_code"] == grpc.StatusCode.INTERNAL.value[0]
    assert failed.status.status_code is StatusCode.ERROR
    assert rejected.attributes["rpc.grpc.status_code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert rejected.status.status_code is StatusCode.UNSET
    crashed = spans["test.Svc/Crash"]
    assert crashed.attributes["rpc.grpc.status_code"] == grpc.StatusCode.UNKNOWN.value[0]
    assert crashed.attributes["error.type"] == "RuntimeError"
    assert crashed.status.status_code is StatusCode.ERROR


async def test_streaming_rpc_span_covers_every_message(
    exporter: InMemorySpanExporter, channel: grpc.aio.Channel
) -> None:
    call = channel.unary_stream("/test.Svc/Stream")(
        b"", metadata=(("traceparent", TRACEPARENT),), timeout=5
    )
    assert [m async for m in call] == [b"0", b"1", b"2"]

    spans = exporter.get_finished_spans()
    server = next(s for s in spans if s.name == "test.Svc/Stream")
    chunks = [s for s in spans if s.name == "chunk"]
    assert len(chunks) == 3
    assert all(c.parent.span_id == server.context.span_id for c in chunks)
    assert format(server.context.trace_id, "032x") == TRACE_ID


async def test_health_checks_are_not_traced(
    exporter: InMemorySpanExporter, channel: grpc.aio.Channel
) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    response = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    assert response.status == health_pb2.HealthCheckResponse.SERVING
    assert exporter.get_finished_spans() == ()


def test_exception_marks_span_with_class_name_only(exporter: InMemorySpanExporter) -> None:
    with pytest.raises(ValueError), tracing.span("tool.call", tool="search"):
        raise ValueError("message that might quote a secret")

    (recorded,) = exporter.get_finished_spans()
    assert recorded.status.status_code is StatusCode.ERROR
    assert recorded.status.description == "ValueError"
    assert recorded.attributes["error.type"] == "ValueError"
    assert recorded.events == ()  # no exception event carrying the message


def test_attributes_are_sanitised(exporter: InMemorySpanExporter) -> None:
    with tracing.span("llm", model="m", key="Bearer abcdefghijklmnop", missing=None, n=3, obj=[1]):
        pass
    (recorded,) = exporter.get_finished_spans()
    assert dict(recorded.attributes) == {
        "model": "m",
        "key": "Bearer [REDACTED]",
        "n": 3,
        "obj": "[1]",
    }


async def test_disabled_tracing_creates_nothing(channel: grpc.aio.Channel) -> None:
    exp = InMemorySpanExporter()
    tracing.setup_tracing(True, exporter=exp)
    tracing.setup_tracing(False)

    first, second = tracing.span("a", x=1), tracing.span("b")
    assert first is second  # one shared no-op, nothing allocated per call
    with first as current:
        current.set_attribute("k", "v")
        assert _current_trace_id() == ""
    assert not tracing.tracing_enabled()

    # The interceptor still puts the caller's trace id into the logs.
    answer = await channel.unary_unary("/test.Svc/Echo")(
        b"", metadata=(("traceparent", TRACEPARENT),), timeout=5
    )
    assert answer.decode() == f"|{TRACE_ID}"
    answer = await channel.unary_unary("/test.Svc/Echo")(b"", timeout=5)
    assert answer.decode() == "|"  # nothing leaks from the previous call
    assert exp.get_finished_spans() == ()


def test_incoming_trace_id_rejects_malformed_headers() -> None:
    assert tracing.incoming_trace_id([("traceparent", TRACEPARENT)]) == TRACE_ID
    assert tracing.incoming_trace_id([("Traceparent", TRACEPARENT)]) == TRACE_ID
    assert tracing.incoming_trace_id([("traceparent", f"00-{'0' * 32}-{PARENT_SPAN_ID}-01")]) == ""
    assert tracing.incoming_trace_id([("traceparent", "garbage")]) == ""
    assert tracing.incoming_trace_id(None) == ""


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_tracing_off_never_imports_opentelemetry() -> None:
    result = _run_python(
        "import sys\n"
        "from hapi_grpc.observability import tracing\n"
        "tracing.setup_tracing(False)\n"
        "with tracing.span('x'):\n"
        "    pass\n"
        "tracing.TracingInterceptor()\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'\n"
    )
    assert result.returncode == 0, result.stderr


def test_missing_opentelemetry_leaves_tracing_off_with_a_warning() -> None:
    result = _run_python(
        "import sys, logging\n"
        "sys.modules['opentelemetry'] = None  # makes every opentelemetry import fail\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "from hapi_grpc.observability import tracing\n"
        "tracing.setup_tracing(True)\n"
        "assert not tracing.tracing_enabled()\n"
        "with tracing.span('x'):\n"
        "    pass\n"
    )
    assert result.returncode == 0, result.stderr
    assert "OpenTelemetry is not installed" in result.stderr


async def test_investigation_spans_cover_rpc_tools_and_data_storage(
    exporter: InMemorySpanExporter,
) -> None:
    """One trace: the RPC span with the tool and Data Storage spans under it."""
    from aiohttp import web

    from hapi.v1 import service_pb2
    from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
    from hapi_grpc.adapters.datastorage_server import create_app
    from hapi_grpc.client import load_analyze_request
    from tests.fakes.first_hit_model import FirstHitModel
    from tests.fakes.investigation import wire_catalog
    from tests.helpers.grpc_server import running_server

    runner = web.AppRunner(create_app(wire_catalog()))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    catalog = DataStorageCatalog(DataStorageClient(f"http://127.0.0.1:{port}"))
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    try:
        async with running_server(catalog=catalog, llm=FirstHitModel()) as srv:
            request = load_analyze_request("examples/oomkilled.json")
            await srv.stub.AnalyzeIncident(
                service_pb2.AnalyzeIncidentRequest(incident=request.incident),
                timeout=30,
                metadata=(("traceparent", f"00-{trace_id}-b7ad6b7169203331-01"),),
            )
    finally:
        await catalog.close()
        await runner.cleanup()
    spans = exporter.get_finished_spans()
    names = {s.name for s in spans}
    assert {
        "tool.search_workflow_catalog",
        "tool.validate_workflow_parameters",
        "datastorage.search",
        "datastorage.schema",
    } <= names
    assert all(format(s.context.trace_id, "032x") == trace_id for s in spans)
