"""The one way this service reads `HAPI_CACHE_URL` and opens a Redis client.

Design notes: docs/internals.md (`adapters/redis_client.py`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["DEFAULT_MAX_CONNECTIONS", "millis", "redis_client", "uses_redis"]

DEFAULT_MAX_CONNECTIONS = 50


def uses_redis(url: str | None) -> bool:
    """True for `redis://` / `rediss://` URLs; False for none or `memory://` (this
    process's memory); ValueError for any other scheme."""
    scheme = urlsplit(url).scheme if url else "memory"
    if scheme not in ("memory", "redis", "rediss"):
        # The scheme only: the URL may carry a password.
        raise ValueError(f"unsupported cache URL scheme {scheme!r} (memory, redis, rediss)")
    return scheme != "memory"


def redis_client(
    url: str, *, op_timeout: float, max_connections: int = DEFAULT_MAX_CONNECTIONS
) -> Any:
    """An asyncio Redis client on a blocking pool of `max_connections`."""
    # Imported here: the Redis client is ~20 MB that a server without
    # HAPI_CACHE_URL would carry for nothing.
    import redis.asyncio as aioredis

    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=op_timeout,
        socket_timeout=op_timeout,
        socket_connect_timeout=op_timeout,
    )
    return aioredis.Redis(connection_pool=pool)


def millis(seconds: float) -> int:
    """An expiry in whole milliseconds, at least 1 (Redis refuses 0)."""
    return max(1, int(seconds * 1000))
