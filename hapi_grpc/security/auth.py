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
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import grpc

from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.sensitive import replace_secrets
from hapi_grpc.security.handler_wrapping import HandlerWrappingInterceptor, Refusal, end_call
from hapi_grpc.security.review_admission import caller_peer

log = logging.getLogger(__name__)

# Probes and tooling must reach these without credentials.
DEFAULT_EXEMPT_PREFIXES = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
)

MISSING_TOKEN_MESSAGE = "missing or malformed authorization metadata (expected a Bearer token)"
INVALID_TOKEN_MESSAGE = "the bearer token was not accepted"
UNAVAILABLE_MESSAGE = (
    "cannot check the bearer token now: the authentication service did not answer; retry later"
)

# Tokens above this size are rejected without asking anybody (a JWT is ~1 KiB).
MAX_TOKEN_LENGTH = 16 * 1024


@dataclass(frozen=True)
class Identity:
    """Who a token belongs to (`extra`: the TokenReview's extra, sorted pairs)."""

    subject: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class AuthenticationUnavailable(Exception):
    """The authenticator cannot decide now (its backend did not answer): the
    call ends with UNAVAILABLE, which callers retry, not UNAUTHENTICATED."""


@runtime_checkable
class Authenticator(Protocol):
    """Decides whether a bearer token is acceptable.

    Returns an `Identity` (or True) to accept, None or False to refuse, and
    raises AuthenticationUnavailable when it cannot tell. Any other exception
    refuses the call (UNAUTHENTICATED).
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


# Less than this left of the caller's deadline: a check that gave up gave up
# because the deadline was spent.
_SPENT_SECONDS = 0.05


def unavailable(context: grpc.aio.ServicerContext, message: str) -> Refusal:
    """UNAVAILABLE, or DEADLINE_EXCEEDED when the caller's own deadline ran out."""
    left = context.time_remaining()
    if left is not None and left < _SPENT_SECONDS:
        return Refusal(grpc.StatusCode.DEADLINE_EXCEEDED, "the caller's deadline ran out")
    return Refusal(grpc.StatusCode.UNAVAILABLE, message)


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class AuthInterceptor(HandlerWrappingInterceptor):
    """Refuses RPCs without a valid bearer token, except exempt methods.

    The check runs inside the call, so the authenticator's requests are bound
    by the caller's deadline; the request is decoded only once the caller is
    accepted. With `allowed_callers`, an authenticated caller not listed (by
    username) ends with PERMISSION_DENIED.
    """

    def __init__(
        self,
        authenticator: Authenticator,
        exempt_prefixes: Sequence[str] = DEFAULT_EXEMPT_PREFIXES,
        *,
        allowed_callers: Collection[str] | None = None,
    ) -> None:
        super().__init__()
        self._authenticator = authenticator
        self._exempt = tuple(exempt_prefixes)
        self._allowed = frozenset(allowed_callers) if allowed_callers is not None else None

    def _applies(self, method: str) -> bool:
        return not method.startswith(self._exempt)

    async def close(self) -> None:
        close = getattr(self._authenticator, "close", None)
        if close is not None:
            await close()

    async def _admit(self, context: grpc.aio.ServicerContext) -> grpc.Status | None:
        """Sets the caller's identity; or the status to refuse the call with."""
        token = bearer_token(context.invocation_metadata())
        if token is None:
            return Refusal(grpc.StatusCode.UNAUTHENTICATED, MISSING_TOKEN_MESSAGE)
        not_now = False
        caller_peer.set(context.peer() or "")  # reviews of unknown tokens are bounded per address
        try:
            with budget_scope(Budget.from_timeout(context.time_remaining())):
                verdict = await self._authenticator.authenticate(token)
        except AuthenticationUnavailable:
            verdict, not_now = None, True
        except Exception as exc:  # fail closed; the message could quote the token
            log.warning(
                "authenticator failed; refusing the call", extra={"error_type": type(exc).__name__}
            )
            verdict = None
        if not_now:
            return unavailable(context, UNAVAILABLE_MESSAGE)
        if not verdict:
            return Refusal(grpc.StatusCode.UNAUTHENTICATED, INVALID_TOKEN_MESSAGE)
        identity = verdict if isinstance(verdict, Identity) else Identity("authenticated")
        if self._allowed is not None and identity.subject not in self._allowed:
            log.warning("caller not allowed; refusing the call", extra={"caller": identity.subject})
            return Refusal(
                grpc.StatusCode.PERMISSION_DENIED,
                f"caller {identity.subject!r} is not allowed to use this service",
            )
        # The handler runs in this task and context, so it sees the value.
        _identity.set(identity)
        return None

    def _wrap(self, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """The same kind of handler, taking raw bytes: a refused caller's
        payload is never parsed."""
        decode = handler.request_deserializer or _raw
        admit = self._admit
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def unary_unary(request: bytes, context: grpc.aio.ServicerContext) -> Any:
                refusal = await admit(context)
                if refusal is not None:
                    end_call(context, refusal)
                    return None
                return await unary(decode(request), context)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, response_serializer=handler.response_serializer
            )
        if handler.unary_stream is not None:
            stream = handler.unary_stream

            async def unary_stream(
                request: bytes, context: grpc.aio.ServicerContext
            ) -> AsyncIterator[Any]:
                refusal = await admit(context)
                if refusal is not None:
                    end_call(context, refusal)
                    return
                async for response in stream(decode(request), context):
                    yield response

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, response_serializer=handler.response_serializer
            )
        return _client_streaming(handler, admit)


def _raw(request: bytes) -> bytes:
    return request


def _client_streaming(
    handler: grpc.RpcMethodHandler,
    admit: Callable[[grpc.aio.ServicerContext], Awaitable[grpc.Status | None]],
) -> grpc.RpcMethodHandler:
    """Client-streaming methods (none in hapi.v1): messages are decoded as the
    handler reads them, which it starts doing only once the caller is admitted."""
    if handler.stream_unary is not None:
        stream_unary = handler.stream_unary

        async def unary(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            refusal = await admit(context)
            if refusal is not None:
                end_call(context, refusal)
                return None
            return await stream_unary(requests, context)

        return grpc.stream_unary_rpc_method_handler(
            unary,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    stream_stream = handler.stream_stream

    async def stream(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        refusal = await admit(context)
        if refusal is not None:
            end_call(context, refusal)
            return
        async for response in stream_stream(requests, context):
            yield response

    return grpc.stream_stream_rpc_method_handler(
        stream,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


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
    every token is refused until it is readable again (fail closed). Tokens
    are compared as SHA-256 digests in constant time; the plaintext is held
    only by the redaction registry, which drops revoked tokens on reload.
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
        # One owner per tokens file: a reload replaces the set, so a revoked
        # token stops being a registered secret.
        replace_secrets(f"auth tokens file {self._path}", tokens)
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
