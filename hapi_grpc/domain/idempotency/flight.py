"""One investigation in flight on this replica, and the fingerprint it is known by."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from hapi_grpc.domain.idempotency.outcome import Finished, FlightResult

__all__ = ["Flight", "Investigate", "LazyFingerprint", "Listener"]

E = TypeVar("E")

Listener = Callable[[E], None]
Investigate = Callable[[Callable[[E], Awaitable[None]]], Awaitable[Finished]]


class LazyFingerprint:
    """An incident's fingerprint, computed on first use and then kept.

    A new investigation on a store only this process sees needs it first when
    its result is saved: an alert storm's start, when every call competes for
    the event loop, no longer pays for a thousand fingerprints at once.
    """

    __slots__ = ("_compute", "_value")

    def __init__(self, value: str | Callable[[], str]) -> None:
        self._value: str | None = value if isinstance(value, str) else None
        self._compute: Callable[[], str] | None = None if isinstance(value, str) else value

    def __call__(self) -> str:
        if self._value is None:
            assert self._compute is not None
            self._value, self._compute = self._compute(), None
        return self._value


@dataclass(slots=True)
class Flight(Generic[E]):
    """One investigation in flight on this replica and the callers waiting for it."""

    fingerprint: LazyFingerprint
    started_at: float
    events: list[E] = field(default_factory=list)
    listeners: list[Listener[E]] = field(default_factory=list)
    waiters: int = 0
    task: asyncio.Task[FlightResult] | None = None

    async def publish(self, event: E) -> None:
        # Joiners replay `events`; their number is bounded by the engine's caps.
        self.events.append(event)
        for listener in list(self.listeners):
            listener(event)
