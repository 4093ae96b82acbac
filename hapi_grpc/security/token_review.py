"""Bearer tokens checked by the Kubernetes TokenReview API, and the `ReviewClient`
that POSTs review objects (TokenReview, SubjectAccessReview) as the service account.

Design notes: docs/internals.md (`security/token_review.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from yarl import URL

from hapi_grpc.adapters.http.client import HttpClient
from hapi_grpc.security.auth import AuthenticationUnavailable, Identity, token_digest
from hapi_grpc.security.review_admission import (
    Flights,
    Known,
    LaneFull,
    ReviewCache,
    UnknownGate,
    peer_host,
)

# The authentication logger, wherever the authenticator lives.
log = logging.getLogger("hapi_grpc.security.auth")

MAX_ANSWER_BYTES = 1 << 20  # a review's answer is a few kilobytes


class ReviewClient:
    """Creates review objects at one API path as the service account (its token file
    re-read when the kubelet rotates it), trusting `ca_file` (the system store
    without one); each request's timeout is `timeout` clipped to the caller's
    deadline."""

    def __init__(self, url: str, ca_file: str | None, sa_token_file: str, timeout: float) -> None:
        base = URL(url)
        self._path = base.raw_path
        self._http = HttpClient(
            str(base.with_path("").with_query(None)),
            name="the API server",
            timeout=timeout,
            headers={"Accept": "application/json"},
            token_file=sa_token_file,
            ca_file=ca_file,
            max_connections=16,
        )

    async def create(self, body: dict[str, Any], error: type[Exception]) -> dict[str, Any]:
        """The status the API server filled into `body`; anything else raises `error`."""
        kind = body["kind"]
        response = await self._http.send(
            "POST", self._path, json_body=body, limit=MAX_ANSWER_BYTES, error_limit=0
        )
        if response.status not in (200, 201):
            raise error(f"{kind} answered HTTP {response.status}")
        if response.over:
            raise error(f"{kind} answer is larger than {MAX_ANSWER_BYTES} bytes")
        try:
            payload = response.json()
        except ValueError as exc:  # not JSON, too large or too deep
            raise error(f"{kind} answer is not usable JSON: {exc}") from None
        status = payload.get("status") if isinstance(payload, dict) else None
        if not isinstance(status, dict):
            raise error(f"{kind} answer has no status")
        return status

    async def close(self) -> None:
        await self._http.close()


class TokenReviewAuthenticator:
    """Validates tokens with the Kubernetes TokenReview API.

    The pod's service account needs the `system:auth-delegator` ClusterRole.
    Accepted and refused tokens are cached for `cache_ttl` and
    `negative_cache_ttl` seconds, keyed by the token's SHA-256; errors (API
    unreachable, timeouts, unexpected answers) raise AuthenticationUnavailable
    and are not cached, so recovery is immediate. With `audiences`, the API must confirm
    that the token is meant for one of them. `clock` (seconds, monotonic)
    decides when cache entries expire; tests inject one instead of waiting.
    """

    def __init__(
        self,
        api_server_url: str,
        ca_file: str | None,
        sa_token_file: str,
        audiences: Sequence[str] | None = None,
        cache_ttl: float = 60.0,
        *,
        negative_cache_ttl: float = 10.0,
        timeout: float = 2.0,
        max_cache_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = ReviewClient(
            api_server_url.rstrip("/") + "/apis/authentication.k8s.io/v1/tokenreviews",
            ca_file,
            sa_token_file,
            timeout,
        )
        self._audiences = list(audiences or ())
        self._cache_ttl = cache_ttl
        self._negative_ttl = negative_cache_ttl
        self._cache: ReviewCache[bytes, Identity | None] = ReviewCache(max_cache_entries, clock)
        self._flights: Flights[Identity | None] = Flights()
        self._known = Known(size=max_cache_entries, clock=clock)
        self._unknown = UnknownGate(clock=clock)

    async def authenticate(self, token: str, peer: str = "") -> Identity | None:
        """The token's identity; reviews of tokens never accepted before are
        bounded per caller address (`peer`)."""
        key = token_digest(token)
        cached = self._cache.get(key)
        if cached is not None:
            return cached[0]
        return await self._flights.run(key, lambda: self._reviewed(key, token, peer))

    async def _reviewed(self, key: bytes, token: str, peer: str) -> Identity | None:
        """The one review of `token` its concurrent callers share, cached once."""
        try:
            if key in self._known:
                identity = await self._review(token)
            else:
                identity = await self._unknown.run(peer_host(peer), lambda: self._review(token))
        except asyncio.CancelledError:
            raise
        except LaneFull:
            log.warning("too many token reviews waiting for one caller address; refusing")
            raise AuthenticationUnavailable("too many token reviews waiting") from None
        except Exception as exc:  # fail closed and say why without any token
            log.warning(
                "TokenReview failed; refusing the call",
                extra={"error_type": type(exc).__name__},
            )
            raise AuthenticationUnavailable("TokenReview did not answer") from None
        if identity is None:
            self._unknown.refused(peer_host(peer))
        ttl = self._cache_ttl if identity is not None else self._negative_ttl
        self._cache.put(key, identity, ttl)
        if identity is not None:
            self._known.add(key)
        return identity

    async def _review(self, token: str) -> Identity | None:
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = self._audiences
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        status = await self._api.create(body, TokenReviewError)
        if status.get("authenticated") is not True:
            return None
        if self._audiences:
            granted = status.get("audiences") or []
            if not set(granted) & set(self._audiences):
                return None
        user = status.get("user") or {}
        username = user.get("username") if isinstance(user, dict) else None
        if not isinstance(username, str) or not username:
            raise TokenReviewError("TokenReview accepted a token without a username")
        groups = tuple(g for g in user.get("groups") or () if isinstance(g, str))
        uid = user.get("uid")
        return Identity(username, groups, uid if isinstance(uid, str) else "", _extra(user))

    async def close(self) -> None:
        await self._api.close()


def _extra(user: dict[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The user's `extra` attributes, sorted, kept for SubjectAccessReviews."""
    extra = user.get("extra")
    if not isinstance(extra, dict):
        return ()
    return tuple(
        sorted(
            (key, tuple(v for v in values if isinstance(v, str)))
            for key, values in extra.items()
            if isinstance(key, str) and isinstance(values, list)
        )
    )


class TokenReviewError(Exception):
    """The TokenReview API did not give a usable answer."""
