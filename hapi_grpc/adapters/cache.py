"""Cache of catalog answers (BR-HAPI-047: 1 h TTL), built on aiocache.

Design notes: docs/internals.md (`adapters/cache.py`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlsplit

from aiocache import Cache
from aiocache.base import BaseCache
from aiocache.serializers import StringSerializer
from pydantic import BaseModel, ValidationError

from hapi_grpc.adapters.redis_client import uses_redis
from hapi_grpc.domain.catalog import SearchQuery
from hapi_grpc.domain.deadline import await_shared
from hapi_grpc.observability import metrics

log = logging.getLogger(__name__)

Kind = Literal["search", "schema", "workflow"]
KINDS: tuple[Kind, ...] = ("search", "schema", "workflow")
M = TypeVar("M", bound=BaseModel)

# Bump when the cached models change shape, so old entries in a shared Redis
# are ignored instead of being parsed into the new models.
KEY_VERSION = 1

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
# What the memory backend spends per entry besides its key and text: its dict
# slot, the expiry timer aiocache schedules, and this cache's own LRU slot.
ENTRY_OVERHEAD = 512


# Canonical JSON; one encoder instance, because json.dumps with options
# builds a new encoder per call, which is a third of a cache hit's key cost.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)


def cache_key(kind: Kind, base_url: str, request: Mapping[str, Any]) -> str:
    """Stable key of one catalog question: sha256 (hex) of its canonical JSON."""
    canonical = _CANONICAL.encode(
        {"v": KEY_VERSION, "kind": kind, "base_url": base_url, "request": request}
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def search_key(base_url: str, query: SearchQuery) -> str:
    """Key of a search: everything that changes the answer; not the audit id."""
    wire = query.to_wire()
    wire.pop("remediation_id", None)
    return cache_key("search", base_url, wire)


def workflow_key(kind: Kind, base_url: str, workflow_id: str) -> str:
    """Key of a schema or workflow lookup by id."""
    return cache_key(kind, base_url, {"workflow_id": workflow_id})


@dataclass
class _Flight:
    """One shared fetch and the number of callers waiting for it."""

    task: asyncio.Task[str]
    waiters: int = 0


class CatalogCache:
    """aiocache-backed cache with single-flight misses and graceful degradation.

    `url`: None or `memory://` for the in-process cache, `redis://[:password@]
    host:port/db` or `rediss://...` for Redis. `ttl` in seconds. `max_entries`
    and `max_bytes` bound the memory backend (least recently used entries go
    first); Redis bounds itself with its own `maxmemory` policy. `op_timeout` caps each
    Redis operation, so a slow Redis costs a lookup at most that long.
    After a backend error the cache is bypassed for `error_cooldown` seconds;
    errors are logged at WARNING once per `error_log_every`. `clock` (seconds,
    monotonic) decides when memory entries expire and when the cooldown ends;
    tests inject one instead of waiting.
    """

    def __init__(
        self,
        url: str | None = None,
        ttl: float = 3600,
        namespace: str = "hapi",
        max_entries: int = 10000,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        op_timeout: float = 0.2,
        error_cooldown: float = 1.0,
        error_log_every: int = 100,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self._ttl = float(ttl)
        self._clock = clock
        self._prefix = f"{namespace}:catalog:" if namespace else "catalog:"
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._error_cooldown = error_cooldown
        self._error_log_every = max(1, error_log_every)
        self._errors = 0
        self._bypass_until = 0.0
        self._inflight: dict[str, _Flight] = {}
        # Keys of the memory backend with their expiry on `clock` and their
        # bytes, least recently used first. aiocache expires entries on the real
        # clock too, which frees their memory; this map decides what a lookup
        # sees, and counts an entry until it leaves it.
        self._lru: OrderedDict[str, tuple[float, int]] | None = None
        self._backend: BaseCache
        if uses_redis(url):
            self.backend = "redis"
            self._backend = _redis_backend(url or "", op_timeout)
        else:
            self.backend = "memory"
            self._lru = OrderedDict()
            # Dict operations cannot hang: no per-op timeout, which would cost
            # an extra task per lookup for nothing.
            self._backend = Cache(Cache.MEMORY, serializer=StringSerializer(), timeout=0)
        self._lookups = {
            (kind, result): metrics.CACHE_LOOKUPS.labels(kind=kind, result=result)
            for kind in KINDS
            for result in ("hit", "miss", "error")
        }

    async def get_or_fetch(
        self, kind: Kind, key: str, model: type[M], fetch: Callable[[], Awaitable[M]]
    ) -> M:
        """The cached answer for `key`, or `fetch()`'s (stored for `ttl`).

        Concurrent misses of one key share one `fetch()`; its error reaches
        every waiter and is not cached. A waiter that is cancelled or runs out
        of its own budget leaves; the fetch is cancelled only when nobody
        waits any more. The shared fetch runs under the budget of the caller
        that started it.
        """
        # The kind is part of the stored key, so answers of different shapes
        # can never be mixed up, whatever key the caller passes.
        full = f"{self._prefix}{kind}:{key}"
        text = await self._get(kind, full)
        if text is not None:
            try:
                value = model.model_validate_json(text)
            except ValidationError:
                # Written by another version of the models: refetch and overwrite.
                log.debug("ignoring unparsable cache entry for %s", kind)
            else:
                self._count(kind, "hit")
                if self._lru is not None and full in self._lru:
                    self._lru.move_to_end(full)
                return value
            self._count(kind, "miss")
        flight = self._inflight.get(full)
        if flight is None:
            task = asyncio.get_running_loop().create_task(self._fill(full, fetch))
            flight = self._inflight[full] = _Flight(task)
            task.add_done_callback(functools.partial(self._landed, full))
        return model.model_validate_json(await self._wait(full, flight))

    async def close(self) -> None:
        """Release the backend's connections."""
        try:
            await self._backend.close()
        except Exception as exc:  # closing a dead Redis must not fail shutdown
            log.debug("closing the catalog cache failed: %s", type(exc).__name__)

    # -- single flight -------------------------------------------------------------

    async def _fill(self, full: str, fetch: Callable[[], Awaitable[M]]) -> str:
        value = await fetch()
        text = value.model_dump_json()
        await self._set(full, text)
        return text

    async def _wait(self, full: str, flight: _Flight) -> str:
        flight.waiters += 1
        try:
            return await await_shared(flight.task, "the catalog")
        finally:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                # Nobody wants the answer any more: abort the request, and
                # forget the flight so a new caller starts a fresh one.
                if self._inflight.get(full) is flight:
                    del self._inflight[full]
                flight.task.cancel()

    def _landed(self, full: str, task: asyncio.Task[str]) -> None:
        flight = self._inflight.get(full)
        if flight is not None and flight.task is task:
            del self._inflight[full]
        if not task.cancelled():
            task.exception()  # retrieved: waiters got it, or nobody was left to

    # -- backend access that never raises -------------------------------------------

    async def _get(self, kind: Kind, full: str) -> str | None:
        if self._bypass_until and self._clock() < self._bypass_until:
            self._count(kind, "error")
            return None
        if self._lru is not None:
            entry = self._lru.get(full)
            if entry is None or self._clock() >= entry[0]:
                if entry is not None:
                    self._forget(full)
                    await self._backend.delete(full)
                self._count(kind, "miss")
                return None
        try:
            value = await self._backend.get(full)
        except Exception as exc:
            self._degraded("lookup", exc)
            self._count(kind, "error")
            return None
        if value is None:
            self._count(kind, "miss")
            return None
        return str(value)

    async def _set(self, full: str, text: str) -> None:
        if self._bypass_until and self._clock() < self._bypass_until:
            return
        try:
            await self._backend.set(full, text, ttl=self._ttl)
            if self._lru is not None:
                if full in self._lru:
                    self._forget(full)
                cost = len(text.encode()) + len(full) + ENTRY_OVERHEAD
                self._lru[full] = (self._clock() + self._ttl, cost)
                self._bytes += cost
                # Entries aiocache expired on its own are still counted here
                # until they are pushed out.
                while len(self._lru) > self._max_entries or self._bytes > self._max_bytes:
                    oldest = next(iter(self._lru))
                    self._forget(oldest)
                    await self._backend.delete(oldest)
        except Exception as exc:
            self._degraded("store", exc)

    def _forget(self, full: str) -> None:
        assert self._lru is not None
        self._bytes -= self._lru.pop(full)[1]

    def _degraded(self, op: str, exc: Exception) -> None:
        self._errors += 1
        self._bypass_until = self._clock() + self._error_cooldown
        if self._errors % self._error_log_every == 1 or self._error_log_every == 1:
            log.warning(
                "catalog cache (%s) %s failed, serving without the cache for %.1fs: %s "
                "(%d cache errors so far)",
                self.backend,
                op,
                self._error_cooldown,
                _describe(exc),
                self._errors,
            )

    def _count(self, kind: Kind, result: str) -> None:
        self._lookups[(kind, result)].inc()


def _redis_backend(url: str, op_timeout: float) -> BaseCache:
    parts = urlsplit(url)
    db_path = parts.path.strip("/")
    try:
        db = int(db_path) if db_path else 0
        port = parts.port or 6379
    except ValueError:
        raise ValueError("invalid Redis cache URL (port and db must be integers)") from None
    pool_kwargs: dict[str, Any] = {"socket_timeout": op_timeout}
    if parts.username:
        pool_kwargs["username"] = unquote(parts.username)
    return Cache(
        Cache.REDIS,
        serializer=StringSerializer(),
        endpoint=parts.hostname or "127.0.0.1",
        port=port,
        db=db,
        password=unquote(parts.password) if parts.password else None,
        ssl=parts.scheme == "rediss",
        timeout=op_timeout,
        create_connection_timeout=op_timeout,
        connection_pool_kwargs=pool_kwargs,
    )


def _describe(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ")[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
