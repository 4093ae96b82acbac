"""Where finished analyses and per-id locks are kept (`domain.result_store_port.ResultStore`).

Design notes: docs/internals.md (`adapters/result_store.py`).
"""

from __future__ import annotations

import base64
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from hapi_grpc.adapters.redis_client import millis, redis_client, uses_redis
from hapi_grpc.domain.result_store_port import ResultStore, StoredResult

__all__ = ["MemoryResultStore", "RedisResultStore", "build_result_store"]

# Bump when the envelope changes shape, so replicas of another version ignore it.
ENVELOPE_VERSION = 2  # 2: the payload is compressed

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# What keeping one result costs besides its payload, fingerprint and id: the
# StoredResult, the entry's tuple and its slot in the ordered dict (measured
# with tracemalloc in tests/application/test_idempotency_store.py).
ENTRY_OVERHEAD = 512


def build_result_store(
    url: str | None, *, namespace: str = "hapi", max_bytes: int = DEFAULT_MAX_BYTES
) -> ResultStore:
    """Redis for `redis://` / `rediss://` URLs, else this process's memory
    (at most `max_bytes`)."""
    if uses_redis(url):
        return RedisResultStore(url or "", namespace=namespace)
    return MemoryResultStore(max_bytes=max_bytes)


class MemoryResultStore:
    """Results and locks in this process, expiring on `clock`: at most
    `max_entries` results and `max_bytes` bytes, the oldest going first."""

    shared = False  # the coordinator takes no locks here

    def __init__(
        self,
        *,
        max_entries: int = 10_000,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be >= 1")
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._clock = clock
        # id -> (expires, result, bytes), oldest insertion first, for eviction.
        self._results: OrderedDict[str, tuple[float, StoredResult, int]] = OrderedDict()
        self._bytes = 0
        self._locks: dict[str, tuple[float, str]] = {}

    @property
    def bytes(self) -> int:
        """What the kept results cost, as counted against `max_bytes`."""
        return self._bytes

    async def get(self, remediation_id: str) -> StoredResult | None:
        entry = self._results.get(remediation_id)
        if entry is None:
            return None
        if self._clock() >= entry[0]:
            self._drop(remediation_id)
            return None
        return entry[1]

    async def put(self, remediation_id: str, result: StoredResult, ttl: float) -> None:
        if remediation_id in self._results:
            self._drop(remediation_id)
        cost = len(result.payload) + len(result.fingerprint) + len(remediation_id) + ENTRY_OVERHEAD
        self._results[remediation_id] = (self._clock() + ttl, result, cost)
        self._bytes += cost
        while len(self._results) > self._max_entries or self._bytes > self._max_bytes:
            self._bytes -= self._results.popitem(last=False)[1][2]

    def _drop(self, remediation_id: str) -> None:
        self._bytes -= self._results.pop(remediation_id)[2]

    async def acquire(self, remediation_id: str, holder: str, ttl: float) -> str | None:
        now = self._clock()
        current = self._locks.get(remediation_id)
        if current is not None and now < current[0]:
            return current[1]
        self._locks[remediation_id] = (now + ttl, holder)
        return None

    async def renew(self, remediation_id: str, holder: str, ttl: float) -> bool:
        current = self._locks.get(remediation_id)
        if current is None or current[1] != holder or self._clock() >= current[0]:
            return False
        self._locks[remediation_id] = (self._clock() + ttl, holder)
        return True

    async def release(self, remediation_id: str, holder: str) -> None:
        current = self._locks.get(remediation_id)
        if current is not None and current[1] == holder:
            del self._locks[remediation_id]

    async def close(self) -> None:
        self._results.clear()
        self._bytes = 0
        self._locks.clear()


# Take the lock, or answer who holds it, in one step.
_ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, ''} end
return {0, redis.call('GET', KEYS[1]) or ''}
"""
# Only the holder may extend or drop its lock.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisResultStore:
    """Results and locks in Redis, shared by every replica.

    Keys: `<namespace>:analysis:result:<remediation_id>` (expiring after the
    result TTL) and `<namespace>:analysis:lock:<remediation_id>` (expiring
    after the lock TTL). `op_timeout` caps each Redis operation.
    """

    shared = True

    def __init__(self, url: str, *, namespace: str = "hapi", op_timeout: float = 0.5) -> None:
        self._prefix = f"{namespace}:analysis:" if namespace else "analysis:"
        self._client: Any = redis_client(url, op_timeout=op_timeout)
        self._acquire = self._client.register_script(_ACQUIRE)
        self._renew = self._client.register_script(_RENEW)
        self._release = self._client.register_script(_RELEASE)

    def result_key(self, remediation_id: str) -> str:
        return f"{self._prefix}result:{remediation_id}"

    def lock_key(self, remediation_id: str) -> str:
        return f"{self._prefix}lock:{remediation_id}"

    async def get(self, remediation_id: str) -> StoredResult | None:
        raw = await self._client.get(self.result_key(remediation_id))
        if raw is None:
            return None
        try:
            envelope = json.loads(raw)
            if envelope.get("v") != ENVELOPE_VERSION:
                return None
            return StoredResult(
                fingerprint=str(envelope["fingerprint"]),
                completed_at=float(envelope["completed_at"]),
                payload=base64.b64decode(envelope["payload"], validate=True),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None  # written by another version: treated as absent

    async def put(self, remediation_id: str, result: StoredResult, ttl: float) -> None:
        envelope = {
            "v": ENVELOPE_VERSION,
            "fingerprint": result.fingerprint,
            "completed_at": result.completed_at,
            "payload": base64.b64encode(result.payload).decode("ascii"),
        }
        await self._client.set(
            self.result_key(remediation_id), json.dumps(envelope), px=millis(ttl)
        )

    async def acquire(self, remediation_id: str, holder: str, ttl: float) -> str | None:
        taken, current = await self._acquire(
            keys=[self.lock_key(remediation_id)], args=[holder, millis(ttl)]
        )
        if int(taken) == 1:
            return None
        return current.decode() if isinstance(current, bytes) else str(current)

    async def renew(self, remediation_id: str, holder: str, ttl: float) -> bool:
        renewed = await self._renew(
            keys=[self.lock_key(remediation_id)], args=[holder, millis(ttl)]
        )
        return bool(int(renewed))

    async def release(self, remediation_id: str, holder: str) -> None:
        await self._release(keys=[self.lock_key(remediation_id)], args=[holder])

    async def close(self) -> None:
        await self._client.aclose()
