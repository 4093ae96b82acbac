"""Where automated decisions are counted for policy rate limits (`RemediationCounter`).

Design notes: docs/internals.md (`adapters/remediation_counter.py`).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Any

from hapi_grpc.adapters.redis_client import millis, redis_client, uses_redis
from hapi_grpc.domain.policy.enforce import Limit, RemediationCounter

__all__ = ["MemoryRemediationCounter", "RedisRemediationCounter", "build_remediation_counter"]


def build_remediation_counter(url: str | None, *, namespace: str = "hapi") -> RemediationCounter:
    """Redis for `redis://` / `rediss://` URLs, else this process's memory."""
    if uses_redis(url):
        return RedisRemediationCounter(url or "", namespace=namespace)
    return MemoryRemediationCounter()


DEFAULT_MAX_BYTES = 8 * 1024 * 1024

# What one (rule, key) pair costs: its deque, the key strings and the dict
# slots, and a float for each decision its window still holds.
_PAIR_OVERHEAD = 768
_PER_DECISION = 32


class MemoryRemediationCounter:
    """Sliding logs in this process, for at most `max_keys` (rule, key) pairs
    and `max_bytes`.

    When more pairs are live than that, the least recently used is forgotten
    (a forgotten pair counts from zero again: size the bounds above the pairs
    one window sees).
    """

    def __init__(
        self,
        *,
        max_keys: int = 100_000,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_keys < 1 or max_bytes < 1:
            raise ValueError("max_keys and max_bytes must be >= 1")
        self._max_keys = max_keys
        self._max_bytes = max_bytes
        self._clock = clock
        self._logs: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()
        self._costs: dict[tuple[str, str], int] = {}
        self._bytes = 0

    async def admit(self, limits: Sequence[Limit]) -> int | None:
        now = self._clock()
        logs = []
        for index, limit in enumerate(limits):
            pair = (limit.rule, limit.key)
            log = self._logs.get(pair)
            if log is None:
                log = self._logs[pair] = deque()
                self._charge(pair, _PAIR_OVERHEAD + len(limit.rule) + len(limit.key))
            self._logs.move_to_end(pair)
            while log and log[0] <= now - limit.window:
                log.popleft()
                self._charge(pair, -_PER_DECISION)
            if len(log) >= limit.limit:
                self._trim()
                return index
            logs.append(log)
        for limit, log in zip(limits, logs, strict=True):  # under every limit, or none
            log.append(now)
            self._charge((limit.rule, limit.key), _PER_DECISION)
        self._trim()
        return None

    def _trim(self) -> None:
        while len(self._logs) > self._max_keys or self._bytes > self._max_bytes:
            oldest, _ = self._logs.popitem(last=False)
            self._bytes -= self._costs.pop(oldest)

    def _charge(self, pair: tuple[str, str], cost: int) -> None:
        self._costs[pair] = self._costs.get(pair, 0) + cost
        self._bytes += cost

    async def close(self) -> None:
        self._logs.clear()
        self._costs.clear()
        self._bytes = 0


# Every limit checked, then the decision counted under all of them, in one
# atomic step on the server's clock (replicas' clocks may differ). Scores are
# milliseconds; ARGV holds the decision's member, then limit and window per key.
_ADMIT = """
local now = redis.call('TIME')
local t = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', t - tonumber(ARGV[2 * i + 1]))
  if redis.call('ZCARD', key) >= tonumber(ARGV[2 * i]) then return i end
end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, t, ARGV[1])
  redis.call('PEXPIRE', key, ARGV[2 * i + 1])
end
return 0
"""


class RedisRemediationCounter:
    """Sliding logs in Redis sorted sets, shared by every replica.

    Key: `<namespace>:policy:rate:<rule>:<sha256 of the key>`, expiring one
    window after the last admitted decision. `op_timeout` caps each operation.
    """

    def __init__(self, url: str, *, namespace: str = "hapi", op_timeout: float = 0.5) -> None:
        self._prefix = f"{namespace}:policy:rate:" if namespace else "policy:rate:"
        self._client: Any = redis_client(url, op_timeout=op_timeout)
        self._admit = self._client.register_script(_ADMIT)

    def redis_key(self, rule: str, key: str) -> str:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return f"{self._prefix}{rule}:{digest}"

    async def admit(self, limits: Sequence[Limit]) -> int | None:
        if not limits:
            return None
        args: list[str | int] = [uuid.uuid4().hex]
        for limit in limits:
            args += [limit.limit, millis(limit.window)]
        keys = [self.redis_key(limit.rule, limit.key) for limit in limits]
        refused = int(await self._admit(keys=keys, args=args))
        return None if refused == 0 else refused - 1

    async def close(self) -> None:
        await self._client.aclose()
