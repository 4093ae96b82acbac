"""OpenTelemetry tracing that costs nothing when it is off.

Design notes: docs/internals.md (`observability/tracing.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from hapi_grpc.domain.sensitive import redact
from hapi_grpc.observability.logging import bind_log_context, reset_log_context

log = logging.getLogger(__name__)

Metadata = Sequence[tuple[str, str | bytes]]

# Health checks and reflection run every few seconds per probe: spans for them
# are noise that costs export bandwidth.
UNTRACED_PREFIXES = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
)


class _NoopSpan:
    """Stands in for a span when tracing is off, so callers need no checks."""

    __slots__ = ()

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def add_event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        pass


_NOOP_SPAN = _NoopSpan()
_NOOP = contextlib.nullcontext(_NOOP_SPAN)  # reusable: it holds no state


@dataclass(frozen=True)
class _Tracing:
    provider: Any  # opentelemetry.sdk.trace.TracerProvider
    tracer: Any
    trace: Any  # the opentelemetry.trace module
    propagate: Any  # the opentelemetry.propagate module


_state: _Tracing | None = None


def setup_tracing(
    enabled: bool,
    service_name: str = "hapi-grpc",
    otlp_endpoint: str | None = None,
    exporter: Any = None,
) -> None:
    """Turn tracing on (exporting to `exporter`, or OTLP/gRPC) or off.

    With `exporter` (for tests: the SDK's InMemorySpanExporter) spans are
    exported synchronously; otherwise they are batched to the OTLP endpoint
    (`otlp_endpoint`, else OTEL_EXPORTER_OTLP_ENDPOINT, else the SDK default).
    When the OpenTelemetry packages are missing, a warning is logged and
    tracing stays off. Calling it again replaces the previous setup.
    """
    global _state
    previous, _state = _state, None
    if previous is not None:
        previous.provider.shutdown()
    if not enabled:
        return
    try:
        from opentelemetry import propagate, trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        if exporter is None:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            processor: Any = BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint))
        else:
            processor = SimpleSpanProcessor(exporter)
    except ImportError as exc:
        log.warning(
            "tracing requested but OpenTelemetry is not installed (pip install "
            "'hapi-grpc[tracing]'); tracing stays off",
            extra={"missing_module": exc.name or ""},
        )
        return
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False
    )
    provider.add_span_processor(processor)
    _state = _Tracing(
        provider=provider,
        tracer=provider.get_tracer("hapi_grpc"),
        trace=trace,
        propagate=propagate,
    )


def shutdown_tracing() -> None:
    """Flush pending spans and turn tracing off (call once at server shutdown)."""
    setup_tracing(False)


def tracing_enabled() -> bool:
    return _state is not None


def span(name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """A context manager around a unit of work, child of the current span.

    Yields the span (or a no-op stand-in) for adding attributes. An exception
    marks the span as failed with the exception's class name only: exception
    messages may carry data that has no place in a trace backend.
    """
    state = _state
    if state is None:
        return _NOOP
    return _span(state, name, attributes)


@contextlib.contextmanager
def _span(
    state: _Tracing,
    name: str,
    attributes: Mapping[str, Any],
    context: Any = None,
    kind: Any = None,
    mark_errors: bool = True,
) -> Iterator[Any]:
    with state.tracer.start_as_current_span(
        name,
        context=context,
        kind=kind if kind is not None else state.trace.SpanKind.INTERNAL,
        attributes=_attributes(attributes),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except grpc.aio.AbortError:
            raise  # a deliberate status answer, judged by the server span
        except BaseException as exc:
            if not mark_errors:
                raise
            current.set_attribute("error.type", type(exc).__name__)
            current.set_status(state.trace.Status(state.trace.StatusCode.ERROR, type(exc).__name__))
            raise


def _attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, str):
            clean[key] = redact(value)
        elif isinstance(value, bool | int | float):
            clean[key] = value
        else:
            clean[key] = redact(str(value))
    return clean


def _carrier(metadata: Metadata | None) -> dict[str, str]:
    carrier: dict[str, str] = {}
    for key, value in metadata or ():
        key = key.lower()
        if key.endswith("-bin"):
            continue  # binary metadata never carries W3C headers
        carrier[key] = value.decode("latin-1") if isinstance(value, bytes) else value
    return carrier


_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


def incoming_trace_id(metadata: Metadata | None) -> str:
    """The caller's trace id from a W3C `traceparent` header, or ""; needs no OpenTelemetry."""
    for key, value in metadata or ():
        # Looked up directly rather than through _carrier: this runs on every
        # RPC even with tracing off.
        if key.lower() != "traceparent":
            continue
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        match = _TRACEPARENT.match(text.strip())
        if not match or match.group(1) == "0" * 32:
            return ""
        return match.group(1)
    return ""


# Codes that mean the server failed (OpenTelemetry RPC conventions); the others
# are the caller's problem and leave the server span unset.
_SERVER_FAULTS = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)

Around = Callable[[grpc.aio.ServicerContext], contextlib.AbstractContextManager[Any]]

# A method handler's behaviour attribute, and how to build a handler of that kind.
HANDLER_KINDS = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler),
    ("unary_stream", grpc.unary_stream_rpc_method_handler),
    ("stream_unary", grpc.stream_unary_rpc_method_handler),
    ("stream_stream", grpc.stream_stream_rpc_method_handler),
)


class TracingInterceptor(grpc.aio.ServerInterceptor):
    """Opens a SERVER span per RPC, child of the caller's trace context.

    The span is named after the method (`hapi.v1.IncidentAnalysisService/AnalyzeIncident`),
    carries `rpc.*` attributes and the final status code, and the trace id is
    bound into the log context for the whole RPC. With tracing off it only
    binds the caller's `traceparent` trace id into the log context, so logs
    still correlate with the caller's traces. Put it first in the interceptor
    list so it also sees calls rejected by later interceptors.
    """

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(UNTRACED_PREFIXES):
            return handler
        metadata = handler_call_details.invocation_metadata
        state = _state
        if state is None:
            trace_id = incoming_trace_id(metadata)
            if trace_id:
                # This coroutine runs in the RPC's own task, before the handler:
                # the binding is seen by the handler and dies with the task.
                bind_log_context(trace_id=trace_id)
            return handler
        parent = state.propagate.extract(_carrier(metadata))

        def around(context: grpc.aio.ServicerContext) -> contextlib.AbstractContextManager[Any]:
            return _server_span(state, method, parent, context)

        return wrap_handler(handler, around)


@contextlib.contextmanager
def _server_span(
    state: _Tracing, method: str, parent: Any, context: grpc.aio.ServicerContext
) -> Iterator[None]:
    full_name = method.lstrip("/")
    service, _, name = full_name.rpartition("/")
    attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": name}
    with _span(
        state, full_name, attributes, parent, state.trace.SpanKind.SERVER, mark_errors=False
    ) as current:
        token = bind_log_context(trace_id=format(current.get_span_context().trace_id, "032x"))
        code: grpc.StatusCode | None = None
        try:
            yield
        except grpc.aio.AbortError:
            code = context.code() or grpc.StatusCode.UNKNOWN
            raise
        except (asyncio.CancelledError, GeneratorExit):
            code = grpc.StatusCode.CANCELLED
            raise
        except BaseException as exc:
            code = grpc.StatusCode.UNKNOWN
            current.set_attribute("error.type", type(exc).__name__)
            raise
        finally:
            reset_log_context(token)
            if code is None:
                code = context.code() or grpc.StatusCode.OK
            current.set_attribute("rpc.grpc.status_code", code.value[0])
            if code in _SERVER_FAULTS:
                current.set_status(state.trace.Status(state.trace.StatusCode.ERROR, code.name))


def wrap_handler(handler: grpc.RpcMethodHandler, around: Around) -> grpc.RpcMethodHandler:
    """`handler` with its behaviour run inside `around(context)`, serializers kept.

    Only coroutine and async-generator behaviours are wrapped; a synchronous
    behaviour (run by grpc.aio in a thread) is returned unchanged.
    """
    for attribute, build in HANDLER_KINDS:
        behaviour = getattr(handler, attribute)
        if behaviour is None:
            continue
        wrapped = _wrap_behaviour(behaviour, around)
        if wrapped is None:
            return handler
        return build(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    return handler


def _wrap_behaviour(behaviour: Callable[..., Any], around: Around) -> Callable[..., Any] | None:
    if inspect.isasyncgenfunction(behaviour):

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with around(context):
                async for response in behaviour(request, context):
                    yield response

        return stream
    if inspect.iscoroutinefunction(behaviour):

        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with around(context):
                return await behaviour(request, context)

        return call
    return None
