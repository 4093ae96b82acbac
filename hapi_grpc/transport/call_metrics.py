"""Per-method gRPC metrics: calls in flight, latency and outcome codes.

`MethodMetrics` resolves one method's metric children once; its `call()`
counts one call while the block runs and records the status code it ends
with (CANCELLED when the caller went away).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc

from hapi_grpc.observability import metrics


class _InFlight:
    """Calls of one method in progress, in every server of this process.

    The gauge reads it when scraped: a plain counter costs far less per call
    than the gauge's locked inc() and dec().
    """

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


_IN_FLIGHT: dict[str, _InFlight] = {}


def _in_flight(label: str) -> _InFlight:
    cell = _IN_FLIGHT.get(label)
    if cell is None:
        cell = _IN_FLIGHT[label] = _InFlight()
        metrics.GRPC_IN_FLIGHT.labels(method=label).set_function(lambda: cell.count)
    return cell


class MethodMetrics:
    """The metric children of one method.

    They are resolved once per method, not on every call: `labels()` takes a
    lock and a dictionary lookup each time.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.in_flight = _in_flight(label)
        self.latency = metrics.GRPC_LATENCY.labels(method=label)
        self.handled: dict[grpc.StatusCode, Any] = {}

    def call(self, context: grpc.aio.ServicerContext) -> CallMetrics:
        """Counts one call while the block runs; its outcome sets the final code."""
        return CallMetrics(self, context)


class CallMetrics:
    __slots__ = ("_context", "_started", "_track")

    def __init__(self, track: MethodMetrics, context: grpc.aio.ServicerContext) -> None:
        self._track = track
        self._context = context
        self._started = 0.0

    def __enter__(self) -> None:
        self._track.in_flight.count += 1
        self._started = time.perf_counter()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        track = self._track
        track.in_flight.count -= 1
        track.latency.observe(time.perf_counter() - self._started)
        code = _code_of(self._context, exc)
        counter = track.handled.get(code)
        if counter is None:
            counter = track.handled[code] = metrics.GRPC_HANDLED.labels(
                method=track.label, code=code.name
            )
        counter.inc()


def _code_of(context: grpc.aio.ServicerContext, exc: BaseException | None) -> grpc.StatusCode:
    if isinstance(exc, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(code, int):  # some grpcio versions report the raw integer
        for candidate in grpc.StatusCode:
            if candidate.value[0] == code:
                return candidate
    return grpc.StatusCode.OK if exc is None else grpc.StatusCode.INTERNAL
