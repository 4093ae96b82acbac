"""Who may ask the API server about a token, and when: coalescing, fair lanes and the
answers kept for a while.

Design notes: docs/internals.md (`security/review_admission.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["Flights", "Known", "LaneFull", "ReviewCache", "UnknownGate", "peer_host"]

K = TypeVar("K")
T = TypeVar("T")


def peer_host(peer: str) -> str:
    """'ipv4:10.0.0.7:5123' -> '10.0.0.7'; 'ipv6:%5B::1%5D:5123' -> '[::1]'."""
    _, _, address = peer.partition(":")
    host = address.rsplit(":", 1)[0] if address.count(":") else address
    return host.replace("%5B", "[").replace("%5D", "]") or peer


class LaneFull(Exception):
    """Too many reviews are waiting for this caller's address."""


class Flights(Generic[T]):
    """Concurrent calls for one key share one task."""

    def __init__(self) -> None:
        self._tasks: dict[bytes, tuple[asyncio.Task[T], list[int]]] = {}

    async def run(self, key: bytes, start: Callable[[], Awaitable[T]]) -> T:
        flight = self._tasks.get(key)
        if flight is None:
            task = asyncio.ensure_future(start())
            flight = (task, [0])
            self._tasks[key] = flight
            task.add_done_callback(lambda _t: self._tasks.pop(key, None))
        task, waiting = flight
        waiting[0] += 1
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if waiting[0] == 1 and not task.done():
                task.cancel()  # the last caller gave up: so does the review
            raise
        finally:
            waiting[0] -= 1


class ReviewCache(Generic[K, T]):
    """Review answers kept until they expire, at most `size` of them: when full, the
    expired go first, then the oldest kept."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self._size = size
        self._clock = clock
        self._entries: dict[K, tuple[float, T]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> tuple[T] | None:
        """The answer kept for `key` (in a 1-tuple: it may be None), or None."""
        entry = self._entries.get(key)
        return (entry[1],) if entry is not None and entry[0] > self._clock() else None

    def put(self, key: K, answer: T, ttl: float) -> None:
        if len(self._entries) >= self._size:
            now = self._clock()
            for stale in [k for k, (expires, _) in self._entries.items() if expires <= now]:
                del self._entries[stale]
            while len(self._entries) >= self._size:
                del self._entries[next(iter(self._entries))]  # oldest insertion first
        self._entries.pop(key, None)
        self._entries[key] = (self._clock() + ttl, answer)


class Known:
    """Digests of tokens the API server accepted, for `ttl` seconds after the last
    acceptance, at most `size` of them (the oldest forgotten first)."""

    def __init__(
        self, ttl: float = 3600.0, size: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._seen: OrderedDict[bytes, float] = OrderedDict()

    def add(self, key: bytes) -> None:
        self._seen.pop(key, None)
        self._seen[key] = self._clock() + self._ttl
        while len(self._seen) > self._size:
            self._seen.popitem(last=False)

    def __contains__(self, key: object) -> bool:
        until = self._seen.get(key)  # type: ignore[call-overload]
        return until is not None and until > self._clock()


class UnknownGate:
    """Admission of reviews for tokens not known to be valid (docs/internals.md)."""

    def __init__(
        self,
        total: int = 8,
        per_peer: int = 2,
        queue: int = 16,
        *,
        memory: float = 60.0,
        peers_remembered: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._free = total
        self._per_peer = per_peer
        self._queue = queue
        self._peers: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}
        self._waiting: list[tuple[int, str, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._memory = memory
        self._remembered = peers_remembered
        self._clock = clock
        self._refused: OrderedDict[str, tuple[int, float]] = OrderedDict()  # count, last

    def refused(self, peer: str) -> None:
        """A token from `peer` was refused: its next reviews wait behind others'."""
        count, _ = self._refused.pop(peer, (0, 0.0))
        self._refused[peer] = (count + 1, self._clock())
        while len(self._refused) > self._remembered:
            self._refused.popitem(last=False)

    def _rank(self, peer: str) -> int:
        count, last = self._refused.get(peer, (0, 0.0))
        return count if self._clock() - last < self._memory else 0

    async def run(self, peer: str, work: Callable[[], Awaitable[T]]) -> T:
        entry = self._peers.get(peer)
        if entry is None:
            entry = (asyncio.Semaphore(self._per_peer), [0])
            self._peers[peer] = entry
        own, calls = entry
        if calls[0] >= self._per_peer + self._queue:
            raise LaneFull(peer)
        calls[0] += 1
        try:
            async with own:
                await self._acquire(peer)
                try:
                    return await work()
                finally:
                    self._release()
        finally:
            calls[0] -= 1
            if calls[0] == 0:
                self._peers.pop(peer, None)

    async def _acquire(self, peer: str) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((next(self._order), peer, granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # granted as this call gave up: pass the slot on
            raise

    def _release(self) -> None:
        """The slot to the waiting review ranked first now (refusals count as they
        come in, also for reviews that were already waiting)."""
        self._waiting = [w for w in self._waiting if not w[2].done()]
        if not self._waiting:
            self._free += 1
            return
        first = min(self._waiting, key=lambda w: (self._rank(w[1]), w[0]))
        self._waiting.remove(first)
        first[2].set_result(None)
