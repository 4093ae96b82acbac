"""The embedded history in this process's memory (one replica's history).

The rules are `backends`'; `redis_store` keeps the same ones in Redis.
"""

from __future__ import annotations

import heapq
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from hapi_grpc.adapters.history.backends import (
    MAX_ATTEMPTS,
    Limits,
    OutcomeRecord,
    decision_cost,
)

__all__ = ["MemoryHistoryBackend"]


@dataclass(slots=True)
class _Kept:
    record: OutcomeRecord
    expires: float
    cost: int


class _Ledger:
    """Bytes and records per tenant, and which tenant holds the most bytes."""

    __slots__ = ("_heap", "bytes", "bytes_of", "entries")

    def __init__(self) -> None:
        self.bytes_of: dict[str, int] = {}
        self.entries = 0
        self.bytes = 0
        # (-bytes, tenant) pushed on every change; entries whose bytes are no
        # longer the tenant's are skipped (a lazy max-heap).
        self._heap: list[tuple[int, _Desc]] = []

    def change(self, tenant: str, cost: int) -> None:
        """`cost` bytes more (or fewer, negative) for `tenant`, one record more (fewer)."""
        held = self.bytes_of.get(tenant, 0) + cost
        self.entries += 1 if cost > 0 else -1
        self.bytes += cost
        if held > 0:
            self.bytes_of[tenant] = held
            heapq.heappush(self._heap, (-held, _Desc(tenant)))
        else:
            self.bytes_of.pop(tenant, None)
        if len(self._heap) > 2 * len(self.bytes_of) + 64:
            self._heap = [(-b, _Desc(t)) for t, b in self.bytes_of.items()]
            heapq.heapify(self._heap)

    def largest(self) -> str | None:
        """The tenant holding the most bytes (ties: the greatest name, as Redis's
        reversed range orders them)."""
        heap = self._heap
        while heap:
            held, tenant = heap[0]
            if self.bytes_of.get(tenant.name) == -held:
                return tenant.name
            heapq.heappop(heap)
        return None


class _Desc:
    """A name that sorts in reverse: the heap's ties go to the greatest name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __lt__(self, other: _Desc) -> bool:
        return self.name > other.name


class MemoryHistoryBackend:
    """Records in this process, under `limits` (see `backends`)."""

    def __init__(self, limits: Limits = Limits(), clock: Callable[[], float] = time.time) -> None:
        self._limits = limits
        self._clock = clock
        # key -> (expires, data, cost), oldest first
        self._decisions: OrderedDict[str, tuple[float, str, int]] = OrderedDict()
        self._decision_bytes = 0
        self._outcomes: dict[str, _Kept] = {}  # "<key>:<attempt>" -> record
        # Ordered sets (dicts of None) of outcome keys, oldest arrival first.
        self._lanes: dict[str, dict[str, None]] = {}
        self._tenant_keys: dict[tuple[str, bool], dict[str, None]] = {}
        self._target_lanes: dict[str, set[str]] = {}
        self._ledger = _Ledger()

    # -- decisions -------------------------------------------------------------

    async def put_decision(self, key: str, data: str) -> None:
        now, limits = self._clock(), self._limits
        old = self._decisions.pop(key, None)
        if old is not None:
            self._decision_bytes -= old[2]
        cost = decision_cost(key, data)
        self._decisions[key] = (now + limits.ttl, data, cost)
        self._decision_bytes += cost
        decisions = self._decisions
        while decisions and (
            len(decisions) > limits.max_total
            or self._decision_bytes > limits.max_decision_bytes
            or next(iter(decisions.values()))[0] <= now
        ):
            self._decision_bytes -= decisions.popitem(last=False)[1][2]

    async def get_decision(self, key: str) -> str | None:
        kept = self._decisions.get(key)
        return kept[1] if kept is not None and self._clock() < kept[0] else None

    # -- outcomes --------------------------------------------------------------

    async def add_outcome(self, record: OutcomeRecord) -> str | None:
        now = self._clock()
        okey = f"{record.key}:{record.attempt}"
        existing = self._outcomes.get(okey)
        if existing is not None:
            if now < existing.expires:
                return existing.record.data
            self._drop(okey)
        # Expiring on the time it was recorded, as the Redis store's index does.
        kept = _Kept(record, record.recorded_at + self._limits.ttl, record.cost)
        self._outcomes[okey] = kept
        self._lanes.setdefault(record.lane, {})[okey] = None
        self._tenant_keys.setdefault((record.tenant, record.failed), {})[okey] = None
        self._target_lanes.setdefault(record.target, set()).add(record.lane)
        self._ledger.change(record.tenant, kept.cost)
        self._expire(record.tenant, now)
        lane = self._lanes[record.lane]
        while len(lane) > self._limits.max_per_target:
            self._drop(next(iter(lane)))
        self._evict(now)
        return None

    async def outcomes_of(self, key: str) -> list[str]:
        now, found = self._clock(), []
        for attempt in range(1, MAX_ATTEMPTS + 1):
            kept = self._outcomes.get(f"{key}:{attempt}")
            if kept is not None and now < kept.expires:
                found.append(kept.record.data)
        return found

    async def outcomes_of_target(self, target: str, since: float) -> list[str]:
        now, found = self._clock(), []
        for lane in self._target_lanes.get(target, ()):
            for okey in self._lanes.get(lane, ()):
                kept = self._outcomes[okey]
                if now < kept.expires and kept.record.recorded_at >= since:
                    found.append(kept.record.data)
        return found

    async def close(self) -> None:
        self._decisions.clear()
        self._outcomes.clear()
        self._lanes.clear()
        self._tenant_keys.clear()
        self._target_lanes.clear()
        self._ledger = _Ledger()
        self._decision_bytes = 0

    # -- bounds ----------------------------------------------------------------

    def _evict(self, now: float) -> None:
        """Over the bounds: the tenant holding the most bytes gives up its
        expired records, else its oldest success or decline, else its oldest failure."""
        limits, ledger = self._limits, self._ledger
        while ledger.entries > limits.max_total or ledger.bytes > limits.max_bytes:
            tenant = ledger.largest()
            if tenant is None:
                return
            if self._expire(tenant, now):
                continue
            keys = self._tenant_keys.get((tenant, False)) or self._tenant_keys[(tenant, True)]
            self._drop(next(iter(keys)))

    def _expire(self, tenant: str, now: float) -> bool:
        """Drop the tenant's records past their TTL (the oldest first); True if any."""
        dropped = False
        for failed in (False, True):
            keys = self._tenant_keys.get((tenant, failed))
            while keys:
                okey = next(iter(keys))
                if self._outcomes[okey].expires > now:
                    break
                self._drop(okey)
                dropped = True
        return dropped

    def _drop(self, okey: str) -> None:
        kept = self._outcomes.pop(okey)
        record = kept.record
        lane = self._lanes[record.lane]
        del lane[okey]
        if not lane:
            del self._lanes[record.lane]
            lanes = self._target_lanes[record.target]
            lanes.discard(record.lane)
            if not lanes:
                del self._target_lanes[record.target]
        index = (record.tenant, record.failed)
        keys = self._tenant_keys[index]
        del keys[okey]
        if not keys:
            del self._tenant_keys[index]
        self._ledger.change(record.tenant, -kept.cost)
