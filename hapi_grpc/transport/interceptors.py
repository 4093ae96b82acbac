"""The server's per-RPC policies for hapi.v1 methods, in one interceptor.

Design notes: docs/internals.md (`transport/interceptors.py`).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import protovalidate
from google.protobuf.message import Message

from hapi_grpc.domain.errors import FieldViolation
from hapi_grpc.domain.sensitive import clip
from hapi_grpc.observability import metrics
from hapi_grpc.transport.admission import (
    CallMetrics,
    ConcurrencyLimit,
    GateCall,
    MethodMetrics,
    ShutdownGate,
    Slot,
)
from hapi_grpc.transport.request_limits import (
    Undecodable,
    UndecodableAnswer,
    rule_path,
    structural_violations,
    tolerant_deserializer,
)
from hapi_grpc.transport.status import (
    bad_request,
    end_call,
    retry_info,
    rich_status,
    status_for,
)

log = logging.getLogger(__name__)

SERVICE_PREFIX = "/hapi.v1."

BUSY_RETRY_AFTER_SECONDS = 1.0
"""The retry delay a refused caller is given (google.rpc.RetryInfo)."""

UnaryBehavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
StreamBehavior = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]


class ServicePolicyInterceptor(grpc.aio.ServerInterceptor):
    """Applies metrics, the shutdown gate, the concurrency cap, request
    validation and error mapping to unary-unary and unary-stream hapi.v1 methods.

    The wrapped handler is built once per (method, handler) and reused:
    rebuilding handlers on every call is measurable overhead. Handlers are
    registered once, so the memo of the last 64 never grows.
    """

    def __init__(
        self,
        max_concurrent_rpcs: int,
        validator: protovalidate.Validator | None = None,
        *,
        gate: ShutdownGate | None = None,
    ) -> None:
        self.concurrency = ConcurrencyLimit(max_concurrent_rpcs)
        self.gate = gate if gate is not None else ShutdownGate()
        self._validator = validator or _default_validator()
        self._wrapped = functools.lru_cache(maxsize=64)(self._wrap)
        self._busy = rich_status(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"server is at its limit of {max_concurrent_rpcs} concurrent requests;"
            " retry with backoff",
            [retry_info(BUSY_RETRY_AFTER_SECONDS)],
        )

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or not method.startswith(SERVICE_PREFIX):
            return handler
        return self._wrapped(method, handler)

    def _wrap(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        # Undecodable bytes reach the handler as an `Undecodable` value, so
        # they are answered, logged and counted here like any bad request.
        deserializer = tolerant_deserializer(handler.request_deserializer)
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(method, handler.unary_unary),
                request_deserializer=deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(method, handler.unary_stream),
                request_deserializer=deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler  # hapi.v1 has no client-streaming methods

    def _wrap_unary(self, method: str, behavior: UnaryBehavior) -> UnaryBehavior:
        admission = _Admission.for_method(self, method)

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with admission(request, context) as refusal:
                if refusal is not None:
                    end_call(context, refusal)
                    return None
                return await behavior(request, context)

        return guarded

    def _wrap_stream(self, method: str, behavior: StreamBehavior) -> StreamBehavior:
        admission = _Admission.for_method(self, method)

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            with admission(request, context) as refusal:
                if refusal is not None:
                    end_call(context, refusal)
                    return
                async for response in behavior(request, context):
                    yield response

        return guarded

    def _invalid_request(self, request: Message) -> grpc.Status | None:
        """INVALID_ARGUMENT with field violations, or None for a valid request.
        Runs inside the caller's concurrency slot, which releases it however
        the validation ends."""
        violations = request_violations(request, self._validator)
        if not violations:
            return None
        summary = "; ".join(f"{v.field or 'request'}: {v.description}" for v in violations[:5])
        return rich_status(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"invalid request: {summary}",
            [bad_request(violations)],
        )


class _Admission:
    """Steps 1 to 6 for one call, held for the whole call: its metrics, a pass
    through the shutdown gate and a concurrency slot, the request's checks,
    and the status an error maps to. The `with` block receives the status to
    refuse the call with, or None to serve it."""

    __slots__ = ("_call", "_context", "_gate_call", "_policy", "_request", "_slot", "_undecodable")

    def __init__(
        self,
        policy: ServicePolicyInterceptor,
        track: MethodMetrics,
        undecodable: UndecodableAnswer,
        request: Any,
        context: grpc.aio.ServicerContext,
    ) -> None:
        self._policy = policy
        self._call = CallMetrics(track, context)
        self._context = context
        self._undecodable = undecodable
        self._request = request
        self._gate_call = GateCall(policy.gate)
        self._slot = Slot(policy.concurrency)

    @classmethod
    def for_method(
        cls, policy: ServicePolicyInterceptor, method: str
    ) -> Callable[[Any, grpc.aio.ServicerContext], _Admission]:
        """A factory of admissions to `method`'s calls."""
        track = MethodMetrics(metrics.grpc_method_label(method))
        undecodable = UndecodableAnswer(method)

        def admission(request: Any, context: grpc.aio.ServicerContext) -> _Admission:
            return cls(policy, track, undecodable, request, context)

        return admission

    def __enter__(self) -> grpc.Status | None:
        # Entered in this order and left in the reverse one (see __exit__);
        # none of these three raises or suppresses an exception.
        self._call.__enter__()
        if not self._gate_call.__enter__():
            return self._policy.gate.refusal
        request = self._request
        if isinstance(request, Undecodable):
            return self._undecodable(request)
        if not self._slot.__enter__():
            return self._policy._busy
        try:
            return self._policy._invalid_request(request)
        except Exception as exc:
            return status_for(exc)

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        # Step 6: an error ends the call with the status it maps to (an abort
        # stands), set before the call's metrics read it; then the call ends
        # as one that returned.
        if isinstance(exc, Exception) and not isinstance(exc, grpc.aio.AbortError):
            end_call(self._context, status_for(exc))
            self.__exit__(None, None, None)
            return True
        self._slot.__exit__(exc_type, exc, tb)  # releases only a slot it took
        self._gate_call.__exit__(exc_type, exc, tb)
        self._call.__exit__(exc_type, exc, tb)
        return False


_EVALUATING = re.compile(r"error evaluating ([\w.\-]+)")


def request_violations(
    message: Message, validator: protovalidate.Validator | None = None
) -> list[FieldViolation]:
    """Violations of the proto's rules by `message`, as domain field violations.

    The declared size rules are checked first (cheaply); a rule protovalidate
    cannot finish evaluating is the caller's input being too large or complex,
    reported as a violation of that rule's field (or of the request).
    """
    structural = structural_violations(message)
    if structural:
        return structural
    try:
        found = (validator or _default_validator()).collect_violations(message)
    except (protovalidate.EvaluationError, protovalidate.CompilationError) as exc:
        return [_unevaluated(message, exc)]
    return [
        FieldViolation(
            # A rule on the top-level message itself has no field path.
            field_path(v.proto.field.elements) if v.proto.field is not None else "",
            v.proto.message,
            v.proto.rule_id,
        )
        for v in found
    ]


def _unevaluated(message: Message, exc: Exception) -> FieldViolation:
    match = _EVALUATING.search(str(exc))
    rule_id = match.group(1) if match else "evaluation"
    path = rule_path(message.DESCRIPTOR, rule_id) if match else None
    level = logging.ERROR if isinstance(exc, protovalidate.CompilationError) else logging.WARNING
    log.log(level, "request rules could not be evaluated: %s", clip(str(exc), 300))
    return FieldViolation(
        path or "", "could not be checked: the value is too large or too deeply nested", rule_id
    )


@functools.cache
def _default_validator() -> protovalidate.Validator:
    return protovalidate.Validator()


def field_path(elements: Any) -> str:
    """`incident.cluster.signal_labels["k"]` style path from protovalidate elements."""
    parts: list[str] = []
    for element in elements:
        part = element.field_name
        sub = element.subscript
        if sub is not None:
            part += f'["{sub.value}"]' if sub.field == "string_key" else f"[{sub.value}]"
        parts.append(part)
    return ".".join(parts)
