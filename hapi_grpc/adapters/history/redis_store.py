"""The embedded history in Redis, shared by every replica.

Design notes: docs/internals.md (`adapters/history/redis_store.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hapi_grpc.adapters.history.backends import (
    MAX_ATTEMPTS,
    Limits,
    OutcomeRecord,
    decision_cost,
)
from hapi_grpc.adapters.redis_client import millis, redis_client

__all__ = ["RedisHistoryBackend"]

# Dropping one indexed record, and a tenant's expired records; shared by the scripts.
_DROP = """
local P = ARGV[1]
local function drop(m)
  local cost, scope, okey, lane = string.match(m, '^(%d+) (%S+) (%S+) (%S+)$')
  redis.call('DEL', okey)
  local lkey = P .. 'lane:' .. lane
  redis.call('ZREM', lkey, m)
  if redis.call('EXISTS', lkey) == 0 then
    redis.call('SREM', P .. 'lanes:' .. string.match(lane, '^([^#]*)#'), lane)
  end
  redis.call('ZREM', P .. 'tenant:' .. scope .. '#' .. string.sub(lane, -1), m)
  if tonumber(redis.call('ZINCRBY', P .. 'tenants', -tonumber(cost), scope)) <= 0 then
    redis.call('ZREM', P .. 'tenants', scope)
  end
  redis.call('HINCRBY', P .. 'totals', 'entries', -1)
  redis.call('HINCRBY', P .. 'totals', 'bytes', -tonumber(cost))
end
local function expire(scope, cutoff)
  local dropped = false
  for _, class in ipairs({'o', 'f'}) do
    local index = P .. 'tenant:' .. scope .. '#' .. class
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', cutoff, 'LIMIT', 0, 100)) do
      drop(m)
      dropped = true
    end
  end
  return dropped
end
"""

# ARGV: prefix, data, ttl ms, recorded_at, max per lane, max entries, max bytes,
# cutoff (expired at or before), member. KEYS: outcome, lane, lanes of the target.
_ADD_OUTCOME = (
    _DROP
    + """
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then
  return {0, redis.call('GET', KEYS[1]) or ''}
end
local m = ARGV[9]
local cost, scope, _, lane = string.match(m, '^(%d+) (%S+) (%S+) (%S+)$')
redis.call('ZADD', KEYS[2], ARGV[4], m)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[3], lane)
redis.call('PEXPIRE', KEYS[3], ARGV[3])
redis.call('ZADD', P .. 'tenant:' .. scope .. '#' .. string.sub(lane, -1), ARGV[4], m)
redis.call('ZINCRBY', P .. 'tenants', cost, scope)
redis.call('HINCRBY', P .. 'totals', 'entries', 1)
redis.call('HINCRBY', P .. 'totals', 'bytes', cost)
expire(scope, ARGV[8])
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if extra > 0 then
  for _, old in ipairs(redis.call('ZRANGE', KEYS[2], 0, extra - 1)) do drop(old) end
end
for _ = 1, 10000 do
  local totals = redis.call('HMGET', P .. 'totals', 'entries', 'bytes')
  if tonumber(totals[1] or '0') <= tonumber(ARGV[6])
      and tonumber(totals[2] or '0') <= tonumber(ARGV[7]) then
    break
  end
  local top = redis.call('ZRANGE', P .. 'tenants', 0, 0, 'REV')
  if #top == 0 then break end
  if not expire(top[1], ARGV[8]) then
    local index = P .. 'tenant:' .. top[1] .. '#'
    local victim = redis.call('ZRANGE', index .. 'o', 0, 0)
    if #victim == 0 then victim = redis.call('ZRANGE', index .. 'f', 0, 0) end
    if #victim == 0 then break end
    drop(victim[1])
  end
end
return {1, ''}
"""
)

# ARGV: prefix, since. KEYS: lanes of the target, its sorted set of the former layout.
_OF_TARGET = """
local found = {}
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', ARGV[1] .. 'lane:' .. lane, ARGV[2], '+inf')) do
    local value = redis.call('GET', string.match(m, '^%d+ %S+ (%S+) '))
    if value then found[#found + 1] = value end
  end
end
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[2], '+inf')) do
  local value = redis.call('GET', key)
  if value then found[#found + 1] = value end
end
return found
"""

# ARGV: prefix, data, ttl ms, now, max entries, max bytes, cutoff, cost. KEYS: decision.
_PUT_DECISION = """
local P = ARGV[1]
local index, costs, totals = P .. 'decisions', P .. 'decision-costs', P .. 'totals'
local function pop(key)
  redis.call('DEL', key)
  redis.call('ZREM', index, key)
  local cost = redis.call('HGET', costs, key)
  if cost then
    redis.call('HDEL', costs, key)
    redis.call('HINCRBY', totals, 'decisions', -1)
    redis.call('HINCRBY', totals, 'decision_bytes', -tonumber(cost))
  end
end
pop(KEYS[1])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', index, ARGV[4], KEYS[1])
redis.call('HSET', costs, KEYS[1], ARGV[8])
redis.call('HINCRBY', totals, 'decisions', 1)
redis.call('HINCRBY', totals, 'decision_bytes', ARGV[8])
for _, key in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', ARGV[7], 'LIMIT', 0, 100)) do
  pop(key)
end
for _ = 1, 10000 do
  local t = redis.call('HMGET', totals, 'decisions', 'decision_bytes')
  if tonumber(t[1] or '0') <= tonumber(ARGV[5]) and tonumber(t[2] or '0') <= tonumber(ARGV[6]) then
    break
  end
  local oldest = redis.call('ZRANGE', index, 0, 0)
  if #oldest == 0 then break end
  pop(oldest[1])
end
return 1
"""


class RedisHistoryBackend:
    """Records in Redis under `limits` (see `backends`); `op_timeout` caps each operation."""

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
        self._of_target = self._client.register_script(_OF_TARGET)
        self._put = self._client.register_script(_PUT_DECISION)

    def _outcome_key(self, key: str, attempt: int) -> str:
        return f"{self._prefix}outcome:{key}:{attempt}"

    async def put_decision(self, key: str, data: str) -> None:
        limits, now = self._limits, self._clock()
        await self._put(
            keys=[f"{self._prefix}decision:{key}"],
            args=[
                self._prefix,
                data,
                millis(limits.ttl),
                repr(now),
                limits.max_total,
                limits.max_decision_bytes,
                repr(now - limits.ttl),
                decision_cost(key, data),
            ],
        )

    async def get_decision(self, key: str) -> str | None:
        return _text(await self._client.get(f"{self._prefix}decision:{key}"))

    async def add_outcome(self, record: OutcomeRecord) -> str | None:
        limits, now = self._limits, self._clock()
        okey = self._outcome_key(record.key, record.attempt)
        member = f"{record.cost} {record.tenant} {okey} {record.lane}"
        stored, existing = await self._add(
            keys=[
                okey,
                f"{self._prefix}lane:{record.lane}",
                f"{self._prefix}lanes:{record.target}",
            ],
            args=[
                self._prefix,
                record.data,
                millis(limits.ttl),
                repr(record.recorded_at),
                limits.max_per_target,
                limits.max_total,
                limits.max_bytes,
                repr(now - limits.ttl),
                member,
            ],
        )
        return None if int(stored) == 1 else _text(existing)

    async def outcomes_of(self, key: str) -> list[str]:
        keys = [self._outcome_key(key, a) for a in range(1, MAX_ATTEMPTS + 1)]
        return [t for t in map(_text, await self._client.mget(keys)) if t is not None]

    async def outcomes_of_target(self, target: str, since: float) -> list[str]:
        found = await self._of_target(
            keys=[f"{self._prefix}lanes:{target}", f"{self._prefix}target:{target}"],
            args=[self._prefix, repr(since)],
        )
        return [t for t in map(_text, found) if t is not None]

    async def close(self) -> None:
        await self._client.aclose()
        await self._client.connection_pool.disconnect()


def _text(raw: Any) -> str | None:
    if raw is None or raw == b"" or raw == "":
        return None
    return raw.decode() if isinstance(raw, bytes) else str(raw)
