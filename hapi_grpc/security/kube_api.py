"""What the TokenReview and SubjectAccessReview clients share: a session to the
API server and the service account's own token."""

from __future__ import annotations

import json
import ssl
from typing import Any

import aiohttp

from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.deadline import request_timeout
from hapi_grpc.domain.sensitive import register_secret

__all__ = ["ReviewClient", "create_review", "open_session", "read_service_account_token"]

MAX_ANSWER_BYTES = 1 << 20  # a review's answer is a few kilobytes


def open_session(ca_file: str | None, timeout: float) -> aiohttp.ClientSession:
    """A session trusting `ca_file` (the system store without one); `timeout` is a
    ceiling: each request's own timeout comes from the caller's deadline."""
    ssl_context: ssl.SSLContext | bool = True
    if ca_file:
        ssl_context = ssl.create_default_context(cafile=ca_file)
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=ssl_context, limit=16),
        timeout=aiohttp.ClientTimeout(total=timeout),
    )


def read_service_account_token(path: str) -> str:
    """The token in `path`, registered as a secret. Read at each use: projected
    tokens are rotated by the kubelet, and the rotated one replaces the old one
    in the redaction registry."""
    with open(path, encoding="utf-8") as handle:
        token = handle.read().strip()
    register_secret(token, owner=f"service account token {path}")
    return token


async def create_review(
    session: aiohttp.ClientSession,
    url: str,
    token: str,
    body: dict[str, Any],
    timeout: float,
    error: type[Exception],
) -> dict[str, Any]:
    """POST a review object (`TokenReview`, `SubjectAccessReview`) and return the
    status the API server filled in; anything else raises `error`."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    kind = body["kind"]
    async with session.post(
        url, data=json.dumps(body), headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
    ) as response:
        if response.status not in (200, 201):
            raise error(f"{kind} answered HTTP {response.status}")
        raw = bytearray()
        async for chunk in response.content.iter_chunked(64 * 1024):
            raw += chunk
            if len(raw) > MAX_ANSWER_BYTES:
                raise error(f"{kind} answer is larger than {MAX_ANSWER_BYTES} bytes")
    try:
        payload = bounded_json.loads(bytes(raw), max_bytes=MAX_ANSWER_BYTES)
    except ValueError as exc:  # not JSON, too large or too deep
        raise error(f"{kind} answer is not usable JSON: {exc}") from None
    status = payload.get("status") if isinstance(payload, dict) else None
    if not isinstance(status, dict):
        raise error(f"{kind} answer has no status")
    return status


class ReviewClient:
    """Creates review objects at one API path as the service account, over one
    session opened on first use; each request's timeout is `timeout` clipped to
    the caller's deadline."""

    def __init__(self, url: str, ca_file: str | None, sa_token_file: str, timeout: float) -> None:
        self.url = url
        self._ca_file = ca_file
        self._sa_token_file = sa_token_file
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def create(self, body: dict[str, Any], error: type[Exception]) -> dict[str, Any]:
        """The status the API server filled into `body`; anything else raises `error`."""
        if self._session is None or self._session.closed:
            self._session = open_session(self._ca_file, self._timeout)
        return await create_review(
            self._session,
            self.url,
            read_service_account_token(self._sa_token_file),
            body,
            request_timeout(self._timeout),
            error,
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
