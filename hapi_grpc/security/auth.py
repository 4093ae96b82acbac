"""Bearer-token authentication for every RPC except health checks and reflection.

Design notes: docs/internals.md (`security/auth.py`).
"""

from __future__ import annotations

import functools
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
from hapi_grpc.observability.tracing import HANDLER_KINDS, UNTRACED_PREFIXES

log = logging.getLogger(__name__)

# Probes and tooling must reach health and reflection without credentials.
EXEMPT_PREFIXES = UNTRACED_PREFIXES

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
    refuses the call (UNAUTHENTICATED). `peer` is the caller's address (gRPC's
    `ipv4:10.0.0.7:5123` form), for authenticators that bound work per address.
    """

    async def authenticate(self, token: str, peer: str = "") -> Identity | bool | None: ...


class AuthenticatedContext:
    """The call's context as an accepted call's handler sees it: gRPC's own, and
    who is calling. Everything but `identity` is the gRPC context's."""

    __slots__ = ("_context", "identity")

    def __init__(self, context: grpc.aio.ServicerContext, identity: Identity) -> None:
        self._context = context
        self.identity = identity

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def identity_of(context: object) -> Identity | None:
    """The identity the auth interceptor handed the handler; None without authentication."""
    return context.identity if isinstance(context, AuthenticatedContext) else None


@dataclass(frozen=True)
class Refusal(grpc.Status):
    """A status without rich details."""

    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, str | bytes], ...] = ()


def end_call(context: grpc.aio.ServicerContext, status: grpc.Status) -> None:
    """Make `status` the call's ending, sent once its handler returns.

    Not `context.abort()`: grpc.aio keeps the AbortError it raises on the
    call's state, and that exception's frames hold the state again, with
    the request and everything on the handler's stack: a reference cycle
    that only a full garbage collection frees. A refused 4 MB request stayed
    resident through thousands of later calls. A handler that sets its
    status and returns leaves nothing behind.
    """
    context.set_code(status.code)
    context.set_details(status.details)
    if status.trailing_metadata:
        context.set_trailing_metadata(status.trailing_metadata)


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
SPENT_SECONDS = 0.05


def unavailable(context: grpc.aio.ServicerContext, message: str) -> Refusal:
    """UNAVAILABLE, or DEADLINE_EXCEEDED when the caller's own deadline ran out."""
    left = context.time_remaining()
    if left is not None and left < SPENT_SECONDS:
        return Refusal(grpc.StatusCode.DEADLINE_EXCEEDED, "the caller's deadline ran out")
    return Refusal(grpc.StatusCode.UNAVAILABLE, message)


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


# Handlers are registered once per server; the memo keeps the last this many.
_MAX_WRAPPED = 64


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Refuses RPCs without a valid bearer token, except exempt methods.

    The check runs inside the call, so the authenticator's requests are bound
    by the caller's deadline; the request is decoded only once the caller is
    accepted. With `allowed_callers`, an authenticated caller not listed (by
    username) ends with PERMISSION_DENIED. Each method's handler is wrapped
    once and the wrapper reused.
    """

    def __init__(
        self,
        authenticator: Authenticator,
        *,
        allowed_callers: Collection[str] | None = None,
    ) -> None:
        self._authenticator = authenticator
        self._allowed = frozenset(allowed_callers) if allowed_callers is not None else None
        self._wrapped = functools.lru_cache(maxsize=_MAX_WRAPPED)(self._wrap)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(EXEMPT_PREFIXES):
            return handler  # an unknown method stays UNIMPLEMENTED
        return self._wrapped(handler)

    async def close(self) -> None:
        close = getattr(self._authenticator, "close", None)
        if close is not None:
            await close()

    async def _admit(self, context: grpc.aio.ServicerContext) -> Identity | Refusal:
        """The caller's identity, or the status to refuse the call with."""
        token = bearer_token(context.invocation_metadata())
        if token is None:
            return Refusal(grpc.StatusCode.UNAUTHENTICATED, MISSING_TOKEN_MESSAGE)
        try:
            with budget_scope(Budget.from_timeout(context.time_remaining())):
                verdict = await self._authenticator.authenticate(token, context.peer() or "")
        except AuthenticationUnavailable:
            return unavailable(context, UNAVAILABLE_MESSAGE)
        except Exception as exc:  # fail closed; the message could quote the token
            log.warning(
                "authenticator failed; refusing the call", extra={"error_type": type(exc).__name__}
            )
            verdict = None
        if not verdict:
            return Refusal(grpc.StatusCode.UNAUTHENTICATED, INVALID_TOKEN_MESSAGE)
        identity = verdict if isinstance(verdict, Identity) else Identity("authenticated")
        if self._allowed is not None and identity.subject not in self._allowed:
            log.warning("caller not allowed; refusing the call", extra={"caller": identity.subject})
            return Refusal(
                grpc.StatusCode.PERMISSION_DENIED,
                f"caller {identity.subject!r} is not allowed to use this service",
            )
        return identity

    def _wrap(self, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        """The same kind of handler, whose behaviour runs only for an accepted
        caller. A unary request arrives as raw bytes and is decoded then, so a
        refused caller's payload is never parsed; a request stream is decoded
        as the behaviour reads it, which it starts doing only then."""
        for kind, build in HANDLER_KINDS:
            behaviour = getattr(handler, kind)
            if behaviour is None:
                continue
            unary_request = kind.startswith("unary_")
            decode = (handler.request_deserializer or _raw) if unary_request else _raw
            guarded = _guarded(self._admit, behaviour, decode, kind.endswith("_stream"))
            return build(
                guarded,
                request_deserializer=None if unary_request else handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


def _raw(request: Any) -> Any:
    return request


def _guarded(
    admit: Callable[[grpc.aio.ServicerContext], Awaitable[Identity | Refusal]],
    behaviour: Callable[..., Any],
    decode: Callable[[Any], Any],
    streams_responses: bool,
) -> Callable[..., Any]:
    """`behaviour` run with the decoded request and the caller's identity once
    `admit` accepts the caller; the call ends with the refusal otherwise."""
    if streams_responses:

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            caller = await admit(context)
            if isinstance(caller, Refusal):
                end_call(context, caller)
                return
            async for response in behaviour(decode(request), AuthenticatedContext(context, caller)):
                yield response

        return stream

    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        caller = await admit(context)
        if isinstance(caller, Refusal):
            end_call(context, caller)
            return None
        return await behaviour(decode(request), AuthenticatedContext(context, caller))

    return unary


# --- Static tokens -------------------------------------------------------------


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read_tokens(path: str) -> list[str]:
    """The file's tokens, one per line; `#` starts a comment line."""
    with open(path, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle.read().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


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
            tokens = _read_tokens(path)
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
            tokens = _read_tokens(path)
        except (OSError, UnicodeDecodeError):
            log.warning("auth tokens file unreadable; refusing all tokens until it is readable")
            self._digests = ()
            self._stamp = None  # try again at the next check
            return
        self._set_tokens(tokens)
        log.info("auth tokens reloaded", extra={"token_count": len(tokens)})

    async def authenticate(self, token: str, peer: str = "") -> Identity | None:
        self._maybe_reload()
        digest = token_digest(token)
        # Compare with every entry (no early exit) so timing says nothing about the list.
        matched = False
        for known in self._digests:
            matched |= hmac.compare_digest(digest, known)
        return Identity("static-token") if matched else None
