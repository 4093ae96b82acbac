"""The one way this service opens a Redis client (`HAPI_CACHE_URL`).

Design notes: docs/internals.md (`adapters/redis_client.py`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_MAX_CONNECTIONS", "redis_client"]

DEFAULT_MAX_CONNECTIONS = 50


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
