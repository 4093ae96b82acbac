"""The HTTP layer shared by the Prometheus and Alertmanager clients.

One GET per call, never retried (the model decides whether to ask again),
bounded three ways: a timeout of `deadline.request_timeout(request_timeout)`
around the whole exchange including the body, a cap on the body size, and no
redirects (the bearer token would follow them to whatever host they name).

The bearer token is read from `token_file` when the file changes: each
request compares the file's mtime and size with the last read, so a rotated
projected service-account token is picked up without a restart and an
unchanged one costs one `stat`. Token values are registered with
`sensitive.register_secret`, and error messages never carry the base URL
(it may hold credentials) or whole bodies.
"""

from __future__ import annotations

import asyncio
import os
import re
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from hapi_grpc.adapters.metrics.errors import MetricsUnavailableError, ResponseTooLargeError
from hapi_grpc.domain import bounded_json, deadline
from hapi_grpc.domain.errors import BudgetExhaustedError
from hapi_grpc.domain.sensitive import clip, redact, register_secret
from hapi_grpc.domain.toolsets.prometheus.settings import parse_headers

__all__ = ["HttpResponse", "HttpSourceSettings", "JsonHttpClient", "parse_headers"]

DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_READ_CHUNK = 64 * 1024
_ERROR_SNIPPET = 300
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


@dataclass(frozen=True)
class HttpSourceSettings:
    """Where a metrics or alerts source lives and how to authenticate to it."""

    url: str
    token_file: str | None = None
    ca_file: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    request_timeout: float = 10.0
    connect_timeout: float = 3.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        url = URL(self.url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("url must be an absolute http(s) URL")
        if self.request_timeout <= 0 or self.connect_timeout <= 0:
            raise ValueError("timeouts must be positive")
        if self.max_response_bytes < 1024:
            raise ValueError("max_response_bytes must be at least 1024")
        for name, value in self.headers.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"headers: {name!r} is not a valid header name")
            if "\r" in value or "\n" in value:
                raise ValueError(f"headers: the value of {name!r} contains a line break")
        if self.ca_file is not None and not os.path.isfile(self.ca_file):
            raise ValueError(f"ca_file {self.ca_file!r} does not exist")


@dataclass(frozen=True)
class HttpResponse:
    """Status and JSON body (None when the body is not JSON) of one answer."""

    status: int
    body: Any
    text: str  # the first few hundred characters, redacted, for messages


class _TokenFile:
    """A bearer token re-read whenever its file's mtime or size changes."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._stamp: tuple[int, int] | None = None
        self._token = ""

    def current(self, source: str) -> str:
        try:
            st = os.stat(self._path)
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                with open(self._path, encoding="utf-8") as fh:
                    token = fh.read(64 * 1024).strip()
                register_secret(token, owner=f"bearer token file {self._path}")  # drops the old
                self._token, self._stamp = token, stamp
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise MetricsUnavailableError(
                f"{source}: cannot read the bearer token file ({why})"
            ) from None
        if not self._token:
            raise MetricsUnavailableError(f"{source}: the bearer token file is empty")
        return self._token


class JsonHttpClient:
    """GET requests with JSON answers to one base URL (a path prefix is kept).

    `source` names the server in messages ("Prometheus", "Alertmanager").
    A `session` passed in is used as is and not closed by `close()`.
    """

    def __init__(
        self,
        source: str,
        settings: HttpSourceSettings,
        *,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.source = source
        self.settings = settings
        url = URL(settings.url)
        if url.password:
            register_secret(url.password)  # sent as basic auth by aiohttp; never shown
        self._base = str(url).rstrip("/")
        self._token = _TokenFile(settings.token_file) if settings.token_file else None
        self._session = session
        self._owns_session = session is None
        self._ssl: ssl.SSLContext | bool = True
        if settings.ca_file:
            self._ssl = ssl.create_default_context(cafile=settings.ca_file)

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            if not self._owns_session:
                raise MetricsUnavailableError(f"{self.source}: the shared HTTP session is closed")
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=20, ssl=self._ssl),
                timeout=aiohttp.ClientTimeout(total=self.settings.request_timeout),
                trust_env=False,
            )
        return self._session

    async def close(self) -> None:
        if self._owns_session and self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", **self.settings.headers}
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token.current(self.source)}"
        return headers

    def timeout(self, cap: float | None = None) -> float:
        """`request_timeout`, lowered to `cap` (a toolset's per-call timeout) and the budget.

        Raises BudgetExhaustedError when the caller's deadline leaves no time.
        """
        configured = self.settings.request_timeout
        return deadline.request_timeout(configured if cap is None else min(configured, cap))

    async def get(
        self, path: str, params: Sequence[tuple[str, str]], *, timeout: float | None = None
    ) -> HttpResponse:
        """GET `path` with `params`; any HTTP status is returned, transport failures raise.

        `timeout` (from `self.timeout()`) defaults to `self.timeout()`.
        """
        if timeout is None:
            timeout = self.timeout()
        headers = self._headers()
        url = URL(self._base + path, encoded=False)
        limit = self.settings.max_response_bytes
        try:
            async with asyncio.timeout(timeout):
                async with self._get_session().get(
                    url,
                    params=list(params),
                    headers=headers,
                    allow_redirects=False,
                    ssl=self._ssl,
                    timeout=aiohttp.ClientTimeout(
                        total=None, sock_connect=min(self.settings.connect_timeout, timeout)
                    ),
                ) as resp:
                    raw = await _read_bounded(resp, limit)
                    status = resp.status
        except TimeoutError:
            budget = deadline.current_budget()
            if budget is not None and budget.remaining() <= 0.05:
                raise BudgetExhaustedError(
                    f"the caller's deadline ran out waiting for {self.source}"
                ) from None
            raise MetricsUnavailableError(
                f"{self.source} did not answer within {timeout:.2f}s"
            ) from None
        except aiohttp.ClientError as exc:
            # `from None`: aiohttp's text names the URL, which may hold credentials.
            raise MetricsUnavailableError(
                f"{self.source} is unreachable ({type(exc).__name__})"
            ) from None
        if raw is None:
            raise ResponseTooLargeError(
                f"{self.source} answered with more than {limit} bytes; narrow the selector, "
                "shorten the range or aggregate (sum by, topk)"
            )
        text = redact(clip(raw[: _ERROR_SNIPPET * 4].decode("utf-8", "replace"), _ERROR_SNIPPET))
        try:
            body = bounded_json.loads(raw, max_bytes=limit) if raw else None
        except ValueError:
            body = None
        return HttpResponse(status, body, " ".join(text.split()))


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The body, or None when it is longer than `limit` bytes."""
    length = resp.content_length
    if length is not None and length > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await resp.content.read(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
