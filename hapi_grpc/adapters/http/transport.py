"""What carries one HTTP exchange: the aiohttp session.

Design notes: docs/internals.md (`adapters/http/transport.py`).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.sensitive import clip, redact

__all__ = [
    "AiohttpTransport",
    "Request",
    "Response",
    "Streamed",
    "Transport",
    "TransportError",
]

_READ_CHUNK = 64 * 1024


class TransportError(Exception):
    """No answer came: the connection failed or dropped, or the body was cut short.

    `kind` is the cause's type name (`ClientConnectorError`); `retryable` is
    False for a failure another attempt cannot mend (an invalid URL).
    """

    def __init__(self, kind: str, *, retryable: bool = True) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retryable = retryable


@dataclass(slots=True)
class Request:
    """One request as the transport sends it: the URL carries the query."""

    method: str
    url: URL
    headers: dict[str, str]
    content: bytes | None = None

    def take_content(self) -> bytes | None:
        """The body, released from the request: a large body is held only while it is
        written, not while the answer is awaited."""
        content, self.content = self.content, None
        return content


@dataclass(slots=True)
class Response:
    """One answer: its status, headers, and at most `limit` bytes of its body."""

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    over: bool = False  # the body went past the limit; `body` holds its first bytes
    reason: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not (or is too deep)."""
        return bounded_json.loads(self.body, max_bytes=max(len(self.body), 1))

    def snippet(self, chars: int = 300) -> str:
        """The start of the body on one line, redacted, for messages."""
        text = self.body[: chars * 4].decode("utf-8", "replace")
        return " ".join(redact(clip(text, chars)).split())


async def _once(data: bytes) -> AsyncIterator[bytes]:
    """The body as aiohttp streams it: the bytes are released as soon as they are
    written, not when the answer comes."""
    yield data


async def read_bounded(content: aiohttp.StreamReader, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of a body, and whether there was more; never reads more
    than `limit + 1` bytes, whatever the server sends."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = await content.read(min(_READ_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    body = b"".join(chunks)
    return body[:limit], size > limit


class Streamed:
    """An answer read as it arrives (a watch): its status, then its chunks."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status

    async def read(self, limit: int) -> tuple[bytes, bool]:
        """At most `limit` bytes of the body, and whether there was more."""
        return await read_bounded(self._response.content, limit)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's chunks as they come; a read timeout raises TimeoutError."""
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except aiohttp.ServerTimeoutError:
            raise TimeoutError("no data within the read timeout") from None
        except aiohttp.ClientError as exc:
            raise TransportError(type(exc).__name__) from None


class AiohttpTransport:
    """Requests over one pooled aiohttp session, created on first use (so it binds to
    the loop that runs the requests) and again after `close`.

    At most `max_connections` connections (waiting for one counts against the
    request's time); TLS with `ssl` (a context with a client certificate, True
    for the system store) or trusting `ca_file` (read when the session is
    made: an unreadable one fails the request); no cookies kept or sent; redirects
    never followed (a bearer or API-key header would be replayed to whatever host
    they name). `backstop` bounds a request the caller forgot to time (never
    aiohttp's 300 s). A `session` passed in is used as is and left open.
    """

    def __init__(
        self,
        *,
        ssl: ssl.SSLContext | bool = True,
        ca_file: str | None = None,
        max_connections: int = 100,
        backstop: float = 60.0,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be >= 1")
        self._ssl = ssl
        self._ca_file = ca_file
        self.max_connections = max_connections
        self._backstop = backstop
        self._session = session
        self._owns_session = session is None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            if not self._owns_session:
                raise TransportError("the shared HTTP session is closed", retryable=False)
            if self._ca_file:
                try:
                    self._ssl = ssl.create_default_context(cafile=self._ca_file)
                except (OSError, ssl.SSLError) as exc:
                    raise TransportError(f"CA file {type(exc).__name__}", retryable=False) from None
                self._ca_file = None
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections, ssl=self._ssl),
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=self._backstop),
            )
        return self._session

    async def send(
        self, request: Request, *, limit: int, error_limit: int, connect_timeout: float
    ) -> Response:
        content = request.take_content()
        headers = request.headers
        data = None
        if content is not None:
            headers = {**headers, "Content-Length": str(len(content))}
            data = _once(content)
            del content  # the stream releases it once written
        try:
            async with self.session().request(
                request.method,
                request.url,
                data=data,
                headers=headers,
                allow_redirects=False,
                # The caller bounds the whole exchange; this only fails fast on an
                # unreachable host.
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout),
            ) as resp:
                bound = limit if 200 <= resp.status < 300 else error_limit
                body, over = await read_bounded(resp.content, bound)
                return Response(resp.status, body, resp.headers, over, resp.reason or "")
        except aiohttp.InvalidURL:
            raise TransportError("InvalidURL", retryable=False) from None
        except aiohttp.ClientError as exc:
            raise TransportError(type(exc).__name__) from None

    @asynccontextmanager
    async def stream(
        self, request: Request, *, connect_timeout: float, read_timeout: float
    ) -> AsyncIterator[Streamed]:
        timeout = aiohttp.ClientTimeout(total=None, connect=connect_timeout, sock_read=read_timeout)
        try:
            async with self.session().request(
                request.method,
                request.url,
                headers=request.headers,
                allow_redirects=False,
                timeout=timeout,
            ) as resp:
                yield Streamed(resp)
        except aiohttp.ServerTimeoutError:
            raise TimeoutError("no answer within the read timeout") from None
        except aiohttp.ClientError as exc:
            raise TransportError(type(exc).__name__) from None

    async def close(self) -> None:
        if self._owns_session and self._session is not None:
            session, self._session = self._session, None
            await session.close()


# The name the adapters that take a transport annotate with.
Transport = AiohttpTransport
