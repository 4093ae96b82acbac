"""What the TokenReview and SubjectAccessReview clients share: a session to the
API server and the service account's own token."""

from __future__ import annotations

import ssl

import aiohttp

from hapi_grpc.domain.sensitive import register_secret

__all__ = ["open_session", "read_service_account_token"]


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
