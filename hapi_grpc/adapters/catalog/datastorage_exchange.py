"""One HTTP attempt against Data Storage, shared by the catalog and history clients.

Sends the request with the attempt's timeout, reads a bounded body, counts the
request on the Data Storage metrics, and sorts the answer the way both clients
retry: a dropped connection or a 429/5xx is a `TransientError` (retried by the
runner, with the server's Retry-After), a timeout is re-raised for the runner to
tell the budget's timeouts from Data Storage's, anything else is the caller's to
interpret (`Reply`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from hapi_grpc.adapters.catalog.datastorage_body import MAX_RESPONSE_BYTES, problem_text
from hapi_grpc.adapters.http_policy import TransientError, read_bounded
from hapi_grpc.adapters.retry import parse_retry_after
from hapi_grpc.observability import metrics

__all__ = ["MAX_ERROR_BODY_BYTES", "Reply", "exchange", "record"]

MAX_ERROR_BODY_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Reply:
    """A 2xx answer's body, or a 3xx/4xx answer's status and problem text."""

    endpoint: str
    status: int
    raw: bytes
    over: bool  # the body went past the bound
    content_type: str
    started: float  # perf_counter at the request, for the latency metric

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def problem(self) -> tuple[str, str]:
        """The RFC 7807 title and detail of an error answer (cleaned, may be empty)."""
        return problem_text(self.raw)


async def exchange(
    session: aiohttp.ClientSession,
    endpoint: str,
    method: str,
    url: URL,
    timeout: float,
    body: Mapping[str, Any] | None = None,
) -> Reply:
    """Send one attempt; raises TransientError for what is worth retrying."""
    started = time.perf_counter()
    try:
        async with session.request(
            method,
            url,
            json=body,
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=timeout, connect=timeout, sock_read=timeout),
        ) as resp:
            status = resp.status
            ok = 200 <= status < 300
            raw, over = await read_bounded(resp, MAX_RESPONSE_BYTES if ok else MAX_ERROR_BODY_BYTES)
            content_type = resp.headers.get("Content-Type", "")
            retry_after = resp.headers.get("Retry-After")
    except TimeoutError:
        record(endpoint, "timeout", started)
        raise
    except aiohttp.ClientError as exc:  # refused or dropped connections, truncated bodies
        record(endpoint, "connection_error", started)
        raise TransientError(f"connection error ({type(exc).__name__})") from None
    reply = Reply(endpoint, status, raw, over, content_type, started)
    if not reply.ok:
        record(endpoint, f"{status // 100}xx" if 300 <= status < 600 else "5xx", started)
        if status == 429 or status >= 500:
            title, _ = reply.problem()
            summary = f"HTTP {status}" + (f" ({title})" if title else "")
            raise TransientError(summary, parse_retry_after(retry_after))
    return reply


def record(endpoint: str, status: str, started: float) -> None:
    """Count one Data Storage request by endpoint and outcome, with its latency."""
    metrics.DATASTORAGE_REQUESTS.labels(endpoint=endpoint, status=status).inc()
    metrics.DATASTORAGE_LATENCY.labels(endpoint=endpoint).observe(time.perf_counter() - started)
