"""The shutdown gate: hapi.v1 calls are refused with UNAVAILABLE once shutdown begins.

Design notes: docs/internals.md (`transport/shutdown_gate.py`).
"""

from __future__ import annotations

import asyncio
import time

import grpc

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

    def call(self) -> _GateCall:
        """Counts one call while the `with` block runs; the block receives
        False when the call must be refused with `refusal`."""
        return _GateCall(self)

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


class _GateCall:
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
