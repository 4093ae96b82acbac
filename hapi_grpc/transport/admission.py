"""What a hapi.v1 call holds while it runs: its metrics (calls in flight, latency,
outcome codes), a pass through the shutdown gate and a concurrency slot.

`MethodMetrics` resolves one method's metric children once; its `call()`
counts one call while the block runs and records the status code it ends
with (CANCELLED when the caller went away). Once shutdown begins, the
`ShutdownGate` refuses hapi.v1 calls with UNAVAILABLE.

Design notes: docs/internals.md (`transport/admission.py`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

import grpc

from hapi_grpc.observability import metrics
from hapi_grpc.transport.status import rich_status

SHUTTING_DOWN = "server is shutting down; retry another replica"

# `wait_until_idle` polls this often, and calls the server idle after this
# many polls in a row with nothing in flight and no new arrival: each poll is
# a turn of the event loop in which grpc.aio could hand over a queued call.
POLL_SECONDS = 0.02
QUIET_POLLS = 3


class ShutdownGate:
    """Counts hapi.v1 calls in progress and refuses new ones once closed."""

    __slots__ = ("arrivals", "closed", "in_flight", "refusal")

    def __init__(self) -> None:
        self.closed = False
        self.in_flight = 0
        self.arrivals = 0
        self.refusal = rich_status(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)

    def close(self) -> None:
        """From now on every call entering the gate is to be refused."""
        self.closed = True

    async def wait_until_idle(self, deadline: float) -> bool:
        """Wait until no call is in flight and none arrived for `QUIET_POLLS`
        polls, or until `deadline` (a `time.monotonic()` value). True if idle."""
        quiet = 0
        seen = self.arrivals
        while True:  # bounded by `deadline`
            quiet = quiet + 1 if self.in_flight == 0 and self.arrivals == seen else 0
            seen = self.arrivals
            if quiet >= QUIET_POLLS:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(POLL_SECONDS, remaining))


class GateCall:
    """Counts one call through `gate` while the `with` block runs; the block
    receives False when the call must be refused with the gate's `refusal`."""

    __slots__ = ("_gate",)

    def __init__(self, gate: ShutdownGate) -> None:
        self._gate = gate

    def __enter__(self) -> bool:
        gate = self._gate
        gate.in_flight += 1
        gate.arrivals += 1
        return not gate.closed

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._gate.in_flight -= 1


class ConcurrencyLimit:
    """Counts hapi.v1 calls in flight against a cap.

    `grpc.aio.server(maximum_concurrent_rpcs=...)` would also count health
    checks, so an overloaded pod would fail its probes and be restarted just
    when it is busiest; this cap applies to the analysis service only.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0


class Slot:
    """A slot of `limit` for the duration of a `with` block, released however
    it ends (refusal, exception, cancellation, a stream closed early); the
    block receives False when the cap is reached."""

    __slots__ = ("_held", "_limit")

    def __init__(self, limit: ConcurrencyLimit) -> None:
        self._limit = limit
        self._held = False

    def __enter__(self) -> bool:
        limit = self._limit
        if limit.in_flight >= limit.limit:
            return False
        limit.in_flight += 1
        self._held = True
        return True

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self._held:
            self._held = False
            self._limit.in_flight -= 1


class _InFlight:
    """Calls of one method in progress, in every server of this process.

    The gauge reads it when scraped: a plain counter costs far less per call
    than the gauge's locked inc() and dec().
    """

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


@functools.cache  # one per method label, shared by every server
def _in_flight(label: str) -> _InFlight:
    cell = _InFlight()
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


class CallMetrics:
    """Counts one call of `track`'s method while the block runs; its outcome
    sets the final code."""

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
