"""Bearer-token authentication for every RPC except health checks and reflection.

`AuthInterceptor` reads `authorization: Bearer <token>` from the call metadata
and asks an `Authenticator`. A call without a valid token ends with
UNAUTHENTICATED and a fixed message; the token itself is never logged, echoed
or kept in clear (caches key on its SHA-256).

Two authenticators:
- `StaticTokenAuthenticator`: tokens listed in a mounted file, reloaded when
  the file changes (Kubernetes updates mounted Secrets in place).
- `TokenReviewAuthenticator` (in `hapi_grpc.security.token_review`): asks
  the Kubernetes API (TokenReview) whether a service-account token is valid;
  caches answers briefly; fails closed.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import grpc

from hapi_grpc.domain.sensitive import register_secret

log = logging.getLogger(__name__)

# Probes and tooling must reach these without credentials.
DEFAULT_EXEMPT_PREFIXES = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
)

MISSING_TOKEN_MESSAGE = "missing or malformed authorization metadata (expected a Bearer token)"
INVALID_TOKEN_MESSAGE = "the bearer token was not accepted"

# Tokens above this size are rejected without asking anybody (a JWT is ~1 KiB).
MAX_TOKEN_LENGTH = 16 * 1024


@dataclass(frozen=True)
class Identity:
    """Who a token belongs to."""

    subject: str
    groups: tuple[str, ...] = ()


@runtime_checkable
class Authenticator(Protocol):
    """Decides whether a bearer token is acceptable.

    Returns an `Identity` (or True) to accept, None or False to refuse. It
    should not raise; the interceptor refuses the call if it does.
    """

    async def authenticate(self, token: str) -> Identity | bool | None: ...


_identity: contextvars.ContextVar[Identity | None] = contextvars.ContextVar(
    "hapi_identity", default=None
)


def current_identity() -> Identity | None:
    """The authenticated caller of the RPC being handled (None without auth)."""
    return _identity.get()


def bearer_token(metadata: Sequence[tuple[str, str | bytes]] | None) -> str | None:
    """The token of exactly one `authorization: Bearer <token>` entry, else None."""
    values = [v for k, v in metadata or () if k.lower() == "authorization"]
    if len(values) != 1:
        return None
    value = values[0]
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    if any(c.isspace() for c in token):
        return None
    return token


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Refuses RPCs without a valid bearer token, except exempt methods."""

    def __init__(
        self,
        authenticator: Authenticator,
        exempt_prefixes: Sequence[str] = DEFAULT_EXEMPT_PREFIXES,
    ) -> None:
        self._authenticator = authenticator
        self._exempt = tuple(exempt_prefixes)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if handler_call_details.method.startswith(self._exempt):
            return await continuation(handler_call_details)
        token = bearer_token(handler_call_details.invocation_metadata)
        if token is None:
            return await _refusal(continuation, handler_call_details, MISSING_TOKEN_MESSAGE)
        try:
            verdict = await self._authenticator.authenticate(token)
        except Exception as exc:  # fail closed; the message could quote the token
            log.warning(
                "authenticator failed; refusing the call", extra={"error_type": type(exc).__name__}
            )
            verdict = None
        if not verdict:
            return await _refusal(continuation, handler_call_details, INVALID_TOKEN_MESSAGE)
        # This coroutine runs in the RPC's own task, so the handler sees the value.
        _identity.set(verdict if isinstance(verdict, Identity) else Identity("authenticated"))
        return await continuation(handler_call_details)


async def _refusal(
    continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
    handler_call_details: grpc.HandlerCallDetails,
    message: str,
) -> grpc.RpcMethodHandler | None:
    """A handler of the same kind as the real one that ends with UNAUTHENTICATED."""
    handler = await continuation(handler_call_details)
    if handler is None:
        return None  # unknown method: UNIMPLEMENTED, as without auth

    async def deny(request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    # No request deserializer: a refused caller's payload is never parsed.
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(deny)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(deny)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(deny)
    return grpc.stream_stream_rpc_method_handler(deny)


# --- Static tokens -------------------------------------------------------------


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _parse_tokens(text: str) -> list[str]:
    tokens = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            tokens.append(line)
    return tokens


class StaticTokenAuthenticator:
    """Accepts tokens listed in a file: one per line, `#` starts a comment line.

    The file is checked for changes at most every `reload_interval` seconds and
    re-read when its mtime, size or inode changed. If it becomes unreadable,
    every token is refused until it is readable again (fail closed). Only
    SHA-256 digests are kept, compared in constant time.
    """

    def __init__(self, tokens: Sequence[str] = (), *, reload_interval: float = 1.0) -> None:
        self._path: str | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._reload_interval = reload_interval
        self._checked_at = 0.0
        self._digests: tuple[bytes, ...] = ()
        self._set_tokens(tokens)

    @classmethod
    def from_file(cls, path: str, *, reload_interval: float = 1.0) -> StaticTokenAuthenticator:
        """Load tokens from `path`; raises ValueError when it is unreadable or lists none."""
        auth = cls(reload_interval=reload_interval)
        auth._path = path
        auth._stamp = _stamp(path)
        try:
            with open(path, encoding="utf-8") as handle:
                tokens = _parse_tokens(handle.read())
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the auth tokens file {path!r}: {exc}") from None
        if not tokens:
            raise ValueError(f"the auth tokens file {path!r} lists no token")
        auth._set_tokens(tokens)
        auth._checked_at = time.monotonic()
        return auth

    def _set_tokens(self, tokens: Sequence[str]) -> None:
        for token in tokens:
            register_secret(token)
        self._digests = tuple(token_digest(t) for t in tokens)

    def _maybe_reload(self) -> None:
        path = self._path
        now = time.monotonic()
        if path is None or now - self._checked_at < self._reload_interval:
            return
        self._checked_at = now
        stamp = _stamp(path)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            with open(path, encoding="utf-8") as handle:
                tokens = _parse_tokens(handle.read())
        except (OSError, UnicodeDecodeError):
            log.warning("auth tokens file unreadable; refusing all tokens until it is readable")
            self._digests = ()
            self._stamp = None  # try again at the next check
            return
        self._set_tokens(tokens)
        log.info("auth tokens reloaded", extra={"token_count": len(tokens)})

    async def authenticate(self, token: str) -> Identity | None:
        self._maybe_reload()
        digest = token_digest(token)
        # Compare with every entry (no early exit) so timing says nothing about the list.
        matched = False
        for known in self._digests:
            matched |= hmac.compare_digest(digest, known)
        return Identity("static-token") if matched else None
