"""`HttpClient`: every HTTP request the service sends goes through one of these.

Design notes: docs/internals.md (`adapters/http/client.py`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from yarl import URL

from hapi_grpc.adapters.http.retry import Attempt, RequestSlots, RetryPolicy, TransientError
from hapi_grpc.adapters.http.retry import run_attempts as _run_attempts
from hapi_grpc.adapters.http.transport import (
    AiohttpTransport,
    Request,
    Response,
    Streamed,
    Transport,
    TransportError,
)
from hapi_grpc.domain import deadline
from hapi_grpc.domain.sensitive import register_secret

if TYPE_CHECKING:
    from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker

__all__ = ["HttpClient", "HttpUnavailable", "LineTooLong", "TokenFile", "lines"]

T = TypeVar("T")
Params = Mapping[str, str] | Sequence[tuple[str, str]]
Auth = Callable[[], Awaitable[str | None]]  # the Authorization header's value, or None
Observe = Callable[[Response | None, BaseException | None, float], None]

DEFAULT_LIMIT = 8 * 1024 * 1024
DEFAULT_ERROR_LIMIT = 64 * 1024
log = logging.getLogger(__name__)


class HttpUnavailable(Exception):
    """No answer from the remote: `message` is safe to show, `kind` the cause's type."""

    def __init__(self, message: str, kind: str = "", *, retryable: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.retryable = retryable


class TokenFile:
    """`Bearer <token>` from a file, re-read when its mtime or size changes: a projected
    service-account token the kubelet rotates is picked up without a restart, and an
    unchanged one costs one `stat`. The token is registered as a secret (the rotated
    one replaces the old); an unreadable or empty file is `HttpUnavailable`."""

    def __init__(self, path: str, *, max_bytes: int = 64 * 1024) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self._stamp: tuple[int, int] | None = None
        self._token = ""

    async def __call__(self) -> str:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                token = self._read()
                register_secret(token, owner=f"bearer token file {self.path}")
                self._token, self._stamp = token, stamp
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or type(exc).__name__
            raise HttpUnavailable(
                f"cannot read the bearer token file ({why})", "token", retryable=False
            ) from None
        if not self._token:
            raise HttpUnavailable("the bearer token file is empty", "token", retryable=False)
        return f"Bearer {self._token}"

    def _read(self) -> str:
        # A small local file, read once per rotation: not worth a thread.
        with open(self.path, encoding="utf-8") as handle:
            return handle.read(self._max_bytes).strip()


class HttpClient:
    """Requests to one remote (docs/internals.md).

    `timeout` is one attempt's (or one exchange's) time, clipped to the budget;
    `connect_timeout` (default: `timeout`) fails fast on an unreachable host.
    `ca_file` (or an `ssl` context) is whom TLS trusts; `token_file` or `auth`
    gives the Authorization header. `retry` (with its `breaker` and request
    `slots`) is what `call` runs (retries logged on `log`); `send` ignores it.
    `transport` defaults to an `AiohttpTransport` of `max_connections`.
    """

    def __init__(
        self,
        base_url: str,
        *,
        name: str,
        timeout: float,
        connect_timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        auth: Auth | None = None,
        token_file: str | None = None,
        ca_file: str | None = None,
        ssl_context: ssl.SSLContext | bool = True,
        max_connections: int = 100,
        retry: RetryPolicy | None = None,
        breaker: RateCircuitBreaker | None = None,
        slots: RequestSlots | None = None,
        transport: Transport | None = None,
        log: logging.Logger = log,
    ) -> None:
        url = URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("the URL must be an absolute http(s) URL")
        if timeout <= 0 or (connect_timeout is not None and connect_timeout <= 0):
            raise ValueError("timeouts must be positive")
        if url.password:
            register_secret(url.password)  # sent as basic auth; never shown
        self.name = name
        self.base_url = str(url).rstrip("/")
        self.timeout_seconds = timeout
        self.connect_timeout = connect_timeout or timeout
        self.headers = dict(headers or {})
        self._auth = TokenFile(token_file) if token_file else auth
        self.retry = retry
        self.log = log  # where retries are logged: the adapter's logger
        self.breaker = breaker
        self.slots = slots
        self.transport: Transport = transport or AiohttpTransport(
            ssl=ssl_context, ca_file=ca_file, max_connections=max_connections, backstop=timeout
        )

    def timeout(self, cap: float | None = None) -> float:
        """The time of one exchange: `timeout`, lowered to `cap` (a tool's per-call
        timeout) and to the caller's budget; BudgetExhaustedError when none is left."""
        configured = self.timeout_seconds if cap is None else min(self.timeout_seconds, cap)
        return deadline.request_timeout(configured)

    async def close(self) -> None:
        await self.transport.close()

    async def _request(
        self,
        method: str,
        path: str,
        params: Params | None,
        headers: Mapping[str, str] | None,
        content: bytes | None,
    ) -> Request:
        url = URL(self.base_url + path, encoded=True)
        if params:
            url = url.extend_query(params)
        sent = {**self.headers, **(headers or {})}
        if self._auth is not None:
            try:
                value = await self._auth()
            except HttpUnavailable as exc:
                raise HttpUnavailable(
                    f"{self.name}: {exc.message}", exc.kind, retryable=False
                ) from None
            if value:
                sent["Authorization"] = value
        return Request(method, url, sent, content)

    async def send(
        self,
        method: str,
        path: str = "",
        *,
        params: Params | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        limit: int = DEFAULT_LIMIT,
        error_limit: int = DEFAULT_ERROR_LIMIT,
    ) -> Response:
        """One exchange, any status returned. `timeout` (default `self.timeout()`)
        bounds it whole; running out raises TimeoutError, a failed connection
        `HttpUnavailable`."""
        if json_body is not None:
            content = json.dumps(json_body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        seconds = self.timeout() if timeout is None else timeout
        request = await self._request(method, path, params, headers, content)
        del content  # the request holds the body until the transport writes it
        try:
            async with asyncio.timeout(seconds):
                return await self.transport.send(
                    request,
                    limit=limit,
                    error_limit=error_limit,
                    connect_timeout=min(self.connect_timeout, seconds),
                )
        except TransportError as exc:
            raise HttpUnavailable(
                f"{self.name} is unreachable ({exc.kind})", exc.kind, retryable=exc.retryable
            ) from None

    async def call(
        self,
        method: str,
        path: str,
        read: Callable[[Response], T],
        *,
        what: str,
        fail: Callable[[str], Exception],
        params: Params | None = None,
        json_body: Any = None,
        encode: Callable[[], bytes] | None = None,
        headers: Mapping[str, str] | None = None,
        limit: int = DEFAULT_LIMIT,
        error_limit: int = DEFAULT_ERROR_LIMIT,
        observe: Observe | None = None,
        on_retry: Callable[[], None] | None = None,
    ) -> T:
        """One logical call under the breaker and the retry policy; `read(response)`
        of the attempt that succeeds. `encode` builds the body anew for each attempt
        (none is held between attempts); `observe(response, error, seconds)` sees
        every attempt; `fail(message)` is the adapter's error for giving up."""
        policy = self.retry
        if policy is None:
            raise ValueError(f"{self.name}: call() needs a retry policy")

        async def attempt(attempt: Attempt) -> T:
            started = time.perf_counter()
            response: Response | None = None
            error: BaseException | None = None
            try:
                response = await self.send(
                    method,
                    path,
                    params=params,
                    json_body=json_body,
                    content=encode() if encode is not None else None,
                    headers=headers,
                    timeout=attempt.timeout,
                    limit=limit,
                    error_limit=error_limit,
                )
                return read(response)
            except HttpUnavailable as exc:
                error = exc
                if not exc.retryable:
                    raise fail(exc.message) from None
                raise TransientError(f"connection error ({exc.kind})") from None
            except BaseException as exc:
                error = exc
                raise
            finally:
                if observe is not None:
                    observe(response, error, time.perf_counter() - started)

        async def attempts() -> T:
            return await _run_attempts(
                policy, what, attempt, fail=fail, log=self.log, on_retry=on_retry, slots=self.slots
            )

        if self.breaker is None:
            return await attempts()
        return await self.breaker.call(attempts)

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
        read_timeout: float,
        connect_timeout: float | None = None,
    ) -> AsyncIterator[Streamed]:
        """An answer read as it arrives: no bound on the whole, `read_timeout` between
        chunks (TimeoutError), `connect_timeout` (default the client's) to connect."""
        request = await self._request(method, path, params, headers, None)
        connect = connect_timeout or self.connect_timeout
        try:
            async with self.transport.stream(
                request, connect_timeout=connect, read_timeout=read_timeout
            ) as answer:
                yield answer
        except TransportError as exc:
            raise HttpUnavailable(f"{self.name} is unreachable ({exc.kind})", exc.kind) from None


class LineTooLong(Exception):
    """A line of a streamed body longer than the bound."""


async def lines(chunks: AsyncIterator[bytes], max_bytes: int) -> AsyncIterator[bytes]:
    """The non-empty lines of a body read as chunks, each at most `max_bytes` (else
    LineTooLong), in time linear in the body."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if size + end - start > max_bytes:
                raise LineTooLong(max_bytes)
            line = b"".join((*parts, chunk[start:end]))
            parts.clear()
            size = 0
            start = end + 1
            if line.strip():
                yield line
        size += len(chunk) - start
        if size > max_bytes:
            raise LineTooLong(max_bytes)
        if start < len(chunk):
            parts.append(chunk[start:])
    line = b"".join(parts)
    if line.strip():
        yield line
