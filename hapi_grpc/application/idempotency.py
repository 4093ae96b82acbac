"""Idempotent investigations: one per remediation id and incident, shared and kept.

Design notes: docs/internals.md (`application/idempotency.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from hapi_grpc.application.kept_results import LockToken, TolerantStore
from hapi_grpc.domain.deadline import await_shared, current_budget
from hapi_grpc.domain.errors import BudgetExhaustedError, IncidentConflictError
from hapi_grpc.domain.result_store_port import ResultStore, StoredResult

__all__ = ["REUSE_KINDS", "Finished", "IdempotencyCoordinator", "Outcome", "ReuseKind"]

log = logging.getLogger("hapi_grpc.application.idempotency")

E = TypeVar("E")

# How a call got its result without running an investigation of its own.
ReuseKind = Literal["joined", "awaited", "stored"]
REUSE_KINDS: tuple[ReuseKind, ...] = ("joined", "awaited", "stored")


@dataclass(frozen=True, slots=True)
class Finished:
    """What an investigation hands the coordinator: the encoded result and whether to keep it."""

    payload: bytes
    keep: bool = True
    # The result message `payload` was encoded from, handed to one caller of this
    # replica instead of its decoding its own copy (the others decode theirs).
    message: Any = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One call's answer: its own copy of the encoded result and how it was obtained."""

    payload: bytes
    completed_at: float  # seconds since the epoch
    reused: ReuseKind | None  # None: this call ran the investigation
    # True when the investigation ran on this replica, so `on_event` saw its
    # events; False when the result came from the store or another replica.
    live: bool = True
    message: Any = None  # `Finished.message`, for this call alone; else None


@dataclass(frozen=True, slots=True)
class FlightResult:
    """How an investigation in flight on this replica ended for its callers."""

    payload: bytes
    completed_at: float  # seconds since the epoch
    # None: this flight ran the investigation; else where it found the result
    # ("stored" before it started, "awaited" from another replica's run).
    origin: ReuseKind | None


def conflict_message(remediation_id: str, state: str) -> str:
    """The error text for a different incident under `remediation_id`."""
    remedy = (
        "set force_reanalysis to analyse this incident instead"
        if state == "was analysed"
        else "retry once that analysis has finished"
    )
    return (
        f"remediation_id {remediation_id!r} {state} for a different incident; "
        f"resend the same incident to get its result, use a new remediation_id, or {remedy}"
    )


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
    message: Any = None  # `Finished.message` until a caller takes it

    async def publish(self, event: E) -> None:
        # Joiners replay `events`; their number is bounded by the engine's caps.
        self.events.append(event)
        for listener in list(self.listeners):
            listener(event)


class IdempotencyCoordinator(Generic[E]):
    """Single flight per remediation id on this replica, results and locks in `store`.

    `store` None, or `result_ttl` 0, keeps nothing and takes no locks: only
    concurrent calls on this replica share an investigation. `clock` gives
    completion times (seconds since the epoch, comparable across replicas).
    """

    def __init__(
        self,
        store: ResultStore | None = None,
        *,
        result_ttl: float = 900.0,
        lock_ttl: float = 15.0,
        poll_interval: float = 0.2,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if result_ttl < 0 or lock_ttl <= 0 or poll_interval <= 0:
            raise ValueError("result_ttl must be >= 0, lock_ttl and poll_interval > 0")
        self._owned = store
        self._store = TolerantStore(store) if store is not None and result_ttl > 0 else None
        self._result_ttl = result_ttl
        self._lock_ttl = lock_ttl
        self._poll = poll_interval
        self._clock = clock
        self._flights: dict[str, Flight[E]] = {}
        # Locks this replica holds (id -> token), all renewed by one task: a
        # renewal task per investigation cost a task, a timer and a context
        # each, a thousand of them in an alert storm.
        self._held: dict[str, LockToken] = {}
        self._renewer: asyncio.Task[None] | None = None
        # Lock token leads: this replica's random id and a counter, unique
        # across replicas without drawing randomness per investigation.
        self._replica = uuid.uuid4().hex
        self._leads = itertools.count(1)

    async def run(
        self,
        remediation_id: str,
        fingerprint: str | Callable[[], str],
        investigate: Investigate[E],
        *,
        force: bool = False,
        on_event: Listener[E] | None = None,
    ) -> Outcome:
        """The result for this id and incident: joined, stored, or from a new investigation.

        `fingerprint` is the incident's fingerprint, or a function that computes
        it; it is called at most once, and only when a result or a call in
        flight has to be told apart, the lock is taken, or the result is saved.

        `investigate(sink)` runs the investigation, sending progress to `sink`.
        `on_event` receives the events of the investigation this call gets
        (those before it joined first), none for a stored result.
        Raises `IncidentConflictError` for a different incident under the id,
        `BudgetExhaustedError` when the caller's own deadline runs out first.
        """
        fingerprint_of = LazyFingerprint(fingerprint)
        flight = self._flights.get(remediation_id)
        if flight is None and not force:
            stored = await self._lookup(remediation_id)
            if stored is not None:
                if stored.fingerprint != fingerprint_of():
                    raise IncidentConflictError(conflict_message(remediation_id, "was analysed"))
                return Outcome(stored.payload, stored.completed_at, "stored", live=False)
            flight = self._flights.get(remediation_id)  # started while we looked
        if flight is not None:
            if flight.fingerprint() != fingerprint_of():
                raise IncidentConflictError(conflict_message(remediation_id, "is being analysed"))
            return await self._wait(remediation_id, flight, on_event, joined=True)
        flight = Flight(fingerprint_of, self._clock())
        # Created in the caller's context: the investigation runs under the
        # budget and log context of the call that started it.
        flight.task = asyncio.get_running_loop().create_task(
            self._lead(remediation_id, flight, investigate, force)
        )
        self._flights[remediation_id] = flight
        flight.task.add_done_callback(functools.partial(self._landed, remediation_id, flight))
        return await self._wait(remediation_id, flight, on_event, joined=False)

    async def close(self) -> None:
        """Cancel investigations still in flight and release the store."""
        for flight in list(self._flights.values()):
            if flight.task is not None:
                flight.task.cancel()
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        if self._owned is not None:
            with contextlib.suppress(Exception):
                await self._owned.close()

    # -- waiting ---------------------------------------------------------------------

    async def _wait(
        self, remediation_id: str, flight: Flight[E], on_event: Listener[E] | None, joined: bool
    ) -> Outcome:
        assert flight.task is not None
        flight.waiters += 1
        if on_event is not None:
            for event in flight.events:
                on_event(event)
            flight.listeners.append(on_event)
        try:
            ended = await await_shared(flight.task, "the investigation")
        finally:
            flight.waiters -= 1
            if on_event is not None:
                flight.listeners.remove(on_event)
            if flight.waiters == 0 and not flight.task.done():
                # Nobody wants the answer any more: stop its model and catalog
                # requests, and let the next caller start afresh.
                if self._flights.get(remediation_id) is flight:
                    del self._flights[remediation_id]
                flight.task.cancel()
        reused = "joined" if joined else ended.origin
        message, flight.message = flight.message, None  # for one caller, None for the next
        return Outcome(
            ended.payload,
            ended.completed_at,
            reused,
            live=ended.origin is None,
            message=message,
        )

    def _landed(self, remediation_id: str, flight: Flight[E], task: asyncio.Task[Any]) -> None:
        if self._flights.get(remediation_id) is flight:
            del self._flights[remediation_id]
        if not task.cancelled():
            task.exception()  # retrieved: the waiters got it, or nobody was left to

    # -- leading -------------------------------------------------------------------

    async def _lead(
        self, remediation_id: str, flight: Flight[E], investigate: Investigate[E], force: bool
    ) -> FlightResult:
        token = None
        if self._store is not None and self._store.store.shared:
            # Other replicas see this id too: take its lock, or get their result.
            taken = await self._lock_or_result(remediation_id, flight, force)
            if isinstance(taken, FlightResult):
                return taken
            token = taken
        # A store only this process sees needs no lock: the flight is one here,
        # and the lookup before it started is the latest word.
        try:
            finished = await investigate(flight.publish)
            flight.message = finished.message
            completed_at = self._clock()
            if finished.keep and self._store is not None:
                kept = StoredResult(flight.fingerprint(), completed_at, finished.payload)
                await self._store.save(remediation_id, kept, self._result_ttl)
            return FlightResult(finished.payload, completed_at, None)
        finally:
            if token is not None:
                await self._let_go(remediation_id, token)

    async def _lock_or_result(
        self, remediation_id: str, flight: Flight[E], force: bool
    ) -> LockToken | FlightResult:
        """The id's lock in the shared store (its token, held and renewed from
        now on), or the result another replica finished meanwhile."""
        assert self._store is not None
        fingerprint = flight.fingerprint()
        token = LockToken(f"{self._replica}-{next(self._leads)}", fingerprint)
        origin: ReuseKind = "stored"
        while True:
            current = await self._store.acquire(remediation_id, token, self._lock_ttl)
            if current is None:
                break
            origin = "awaited"
            # Another replica runs this id: wait for its result, or for its lock to go.
            if current.fingerprint != fingerprint:
                raise IncidentConflictError(conflict_message(remediation_id, "is being analysed"))
            stored = await self._lookup(remediation_id)
            if (
                stored is not None
                and stored.fingerprint == fingerprint
                and (not force or stored.completed_at >= flight.started_at)
            ):
                return FlightResult(stored.payload, stored.completed_at, "awaited")
            budget = current_budget()
            if budget is not None and budget.expired:
                raise BudgetExhaustedError("the deadline ran out waiting for another replica")
            await asyncio.sleep(self._poll)
        self._hold(remediation_id, token)
        if force:
            return token
        try:
            # Another replica may have finished between our lookup and the lock.
            stored = await self._lookup(remediation_id)
        except BaseException:  # cancelled: the lock goes with us
            await self._let_go(remediation_id, token)
            raise
        if stored is None:
            return token
        await self._let_go(remediation_id, token)
        if stored.fingerprint != fingerprint:
            raise IncidentConflictError(conflict_message(remediation_id, "was analysed"))
        return FlightResult(stored.payload, stored.completed_at, origin)

    async def _let_go(self, remediation_id: str, token: LockToken) -> None:
        if self._held.get(remediation_id) == token:
            del self._held[remediation_id]
        assert self._store is not None
        await self._store.release(remediation_id, token)

    def _hold(self, remediation_id: str, token: LockToken) -> None:
        self._held[remediation_id] = token
        if self._renewer is None or self._renewer.done():
            # Not tied to the caller's budget or context: it outlives them.
            self._renewer = asyncio.get_running_loop().create_task(
                self._renew_held(), context=contextvars.Context()
            )

    async def _renew_held(self) -> None:
        """Renew every held lock each third of its TTL; ends when none is held."""
        assert self._store is not None
        while self._held:
            await asyncio.sleep(self._lock_ttl / 3)
            for remediation_id, token in list(self._held.items()):
                if self._held.get(remediation_id) != token:
                    continue  # released while we renewed the others
                if not await self._store.renew(remediation_id, token, self._lock_ttl):
                    log.warning("lost the analysis lock of a remediation id; continuing")
                    if self._held.get(remediation_id) == token:
                        del self._held[remediation_id]

    # -- results kept ----------------------------------------------------------------

    async def _lookup(self, remediation_id: str) -> StoredResult | None:
        return None if self._store is None else await self._store.lookup(remediation_id)
