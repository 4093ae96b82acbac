"""Where the embedded history keeps its records: this process, or Redis.

Both are bounded: records expire after `ttl`, a target keeps its newest
`max_per_target` outcomes, and at most `max_total` outcomes (and decisions)
are kept in all; the oldest go first. Outcomes are written only if absent
(the key is `(remediation_id, attempt)`), atomically, so two replicas
receiving the same report agree on which one was first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hapi_grpc.adapters.redis_client import redis_client

__all__ = ["HistoryBackend", "Limits", "MemoryHistoryBackend", "RedisHistoryBackend"]

MAX_ATTEMPTS = 100  # the request's `attempt` bound


@dataclass(frozen=True, slots=True)
class Limits:
    ttl: float = 90 * 86_400.0
    max_per_target: int = 100
    max_total: int = 100_000


class HistoryBackend(Protocol):
    """Raw records by key; every method may raise on backend failure."""

    async def put_decision(self, remediation_id: str, data: str) -> None: ...

    async def get_decision(self, remediation_id: str) -> str | None: ...

    async def add_outcome(
        self, remediation_id: str, attempt: int, target: str, completed_at: float, data: str
    ) -> str | None:
        """Keep `data` unless the key holds a record: then that record, unchanged."""
        ...

    async def outcomes_of(self, remediation_id: str) -> list[str]: ...

    async def outcomes_of_target(self, target: str, since: float) -> list[str]: ...

    async def close(self) -> None: ...


class MemoryHistoryBackend:
    """Records in this process (one replica's history)."""

    def __init__(self, limits: Limits = Limits(), clock: Callable[[], float] = time.time) -> None:
        self._limits = limits
        self._clock = clock
        self._decisions: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._outcomes: OrderedDict[tuple[str, int], tuple[float, str]] = OrderedDict()
        # target -> {(remediation_id, attempt): completed_at}, newest targets last
        self._targets: OrderedDict[str, dict[tuple[str, int], float]] = OrderedDict()

    async def put_decision(self, remediation_id: str, data: str) -> None:
        self._decisions.pop(remediation_id, None)
        self._decisions[remediation_id] = (self._clock() + self._limits.ttl, data)
        while len(self._decisions) > self._limits.max_total:
            self._decisions.popitem(last=False)

    async def get_decision(self, remediation_id: str) -> str | None:
        return _live(self._decisions.get(remediation_id), self._clock())

    async def add_outcome(
        self, remediation_id: str, attempt: int, target: str, completed_at: float, data: str
    ) -> str | None:
        key = (remediation_id, attempt)
        existing = _live(self._outcomes.get(key), self._clock())
        if existing is not None:
            return existing
        limits = self._limits
        self._outcomes[key] = (self._clock() + limits.ttl, data)
        while len(self._outcomes) > limits.max_total:
            self._outcomes.popitem(last=False)
        index = self._targets.pop(target, {})
        index[key] = completed_at
        if len(index) > limits.max_per_target:
            kept = sorted(index.items(), key=lambda item: item[1])[-limits.max_per_target :]
            index = dict(kept)
        self._targets[target] = index
        while len(self._targets) > limits.max_total:
            self._targets.popitem(last=False)
        return None

    async def outcomes_of(self, remediation_id: str) -> list[str]:
        now = self._clock()
        found = (
            _live(self._outcomes.get((remediation_id, a)), now) for a in range(1, MAX_ATTEMPTS + 1)
        )
        return [data for data in found if data is not None]

    async def outcomes_of_target(self, target: str, since: float) -> list[str]:
        now = self._clock()
        found = (
            _live(self._outcomes.get(key), now)
            for key, at in self._targets.get(target, {}).items()
            if at >= since
        )
        return [data for data in found if data is not None]

    async def close(self) -> None:
        self._decisions.clear()
        self._outcomes.clear()
        self._targets.clear()


def _live(entry: tuple[float, str] | None, now: float) -> str | None:
    return entry[1] if entry is not None and now < entry[0] else None


# Keep the outcome unless its key exists; index it by target and in the
# store-wide list, trimming both (the oldest outcomes beyond the bound go).
_ADD_OUTCOME = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[6])
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[4]) + 1))
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  redis.call('ZADD', KEYS[3], ARGV[3], KEYS[1])
  local extra = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[5])
  if extra > 0 then
    local old = redis.call('ZPOPMIN', KEYS[3], extra)
    for i = 1, #old, 2 do redis.call('DEL', old[i]) end
  end
  return {1, ''}
end
return {0, redis.call('GET', KEYS[1]) or ''}
"""


# Keep a decision and index it in the decisions' list, trimmed to the bound
# (the oldest decisions beyond it go), as the memory backend does.
_PUT_DECISION = """
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], extra)
  for i = 1, #old, 2 do redis.call('DEL', old[i]) end
end
return 1
"""


class RedisHistoryBackend:
    """Records in Redis, shared by every replica.

    Keys: `<ns>:history:decision:<id>`, `<ns>:history:outcome:<id>:<attempt>`
    (expiring after the TTL), `<ns>:history:target:<target>` (sorted set of a
    target's outcome keys by completion time), `<ns>:history:all` and
    `<ns>:history:decisions` (every outcome key, every decision key, by time).
    """

    def __init__(
        self,
        url: str,
        *,
        limits: Limits = Limits(),
        namespace: str = "hapi",
        op_timeout: float = 0.5,
        max_connections: int = 50,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._limits = limits
        self._clock = clock
        self._prefix = f"{namespace}:history:" if namespace else "history:"
        self._client: Any = redis_client(
            url, op_timeout=op_timeout, max_connections=max_connections
        )
        self._add = self._client.register_script(_ADD_OUTCOME)
        self._put = self._client.register_script(_PUT_DECISION)

    def _outcome_key(self, remediation_id: str, attempt: int) -> str:
        return f"{self._prefix}outcome:{remediation_id}:{attempt}"

    async def put_decision(self, remediation_id: str, data: str) -> None:
        await self._put(
            keys=[f"{self._prefix}decision:{remediation_id}", f"{self._prefix}decisions"],
            args=[data, _millis(self._limits.ttl), repr(self._clock()), self._limits.max_total],
        )

    async def get_decision(self, remediation_id: str) -> str | None:
        raw = await self._client.get(f"{self._prefix}decision:{remediation_id}")
        return _text(raw)

    async def add_outcome(
        self, remediation_id: str, attempt: int, target: str, completed_at: float, data: str
    ) -> str | None:
        limits = self._limits
        stored, existing = await self._add(
            keys=[
                self._outcome_key(remediation_id, attempt),
                f"{self._prefix}target:{target}",
                f"{self._prefix}all",
            ],
            args=[
                data,
                _millis(limits.ttl),
                repr(completed_at),
                limits.max_per_target,
                limits.max_total,
                repr(self._clock() - limits.ttl),
            ],
        )
        return None if int(stored) == 1 else _text(existing)

    async def outcomes_of(self, remediation_id: str) -> list[str]:
        keys = [self._outcome_key(remediation_id, a) for a in range(1, MAX_ATTEMPTS + 1)]
        return [t for t in map(_text, await self._client.mget(keys)) if t is not None]

    async def outcomes_of_target(self, target: str, since: float) -> list[str]:
        keys = await self._client.zrangebyscore(
            f"{self._prefix}target:{target}", repr(since), "+inf"
        )
        if not keys:
            return []
        return [t for t in map(_text, await self._client.mget(keys)) if t is not None]

    async def close(self) -> None:
        await self._client.aclose()
        await self._client.connection_pool.disconnect()


def _text(raw: Any) -> str | None:
    if raw is None or raw == b"" or raw == "":
        return None
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _millis(seconds: float) -> int:
    return max(1, int(seconds * 1000))
