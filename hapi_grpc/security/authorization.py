"""Which namespaces an authenticated caller may investigate, and the `Caller` it is.

Design notes: docs/internals.md (`security/authorization.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import (
    AuthorizationUnavailableError,
    BudgetExhaustedError,
    PermissionDeniedError,
)
from hapi_grpc.domain.tenancy import Caller, Exposure
from hapi_grpc.security.auth import SPENT_SECONDS, Identity
from hapi_grpc.security.review_admission import ReviewCache
from hapi_grpc.security.token_review import ReviewClient

log = logging.getLogger(__name__)

SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class AuthorizationUnavailable(Exception):
    """The authorization could not be checked (the API server did not answer usably)."""


class NamespaceAuthorizer(Protocol):
    async def allowed(self, identity: Identity, namespace: str) -> bool:
        """True when `identity` may investigate `namespace` ("" = cluster-scoped).

        Raises AuthorizationUnavailable when it cannot tell.
        """
        ...


def glob_match(pattern: str, text: str) -> bool:
    """Shell-style match with `*` (any run) and `?` (one character), no regex:
    greedy with one backtrack point, O(len(pattern) * len(text)) at worst."""
    p = t = 0
    star, mark = -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] in ("?", text[t]):
            p += 1
            t += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, t
            p += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            t = mark
        else:
            return False
    return all(c == "*" for c in pattern[p:])


class StaticNamespaceAuthorizer:
    """Static-token callers may investigate the namespaces of an explicit list."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p.strip() for p in patterns if p.strip())

    async def allowed(self, identity: Identity, namespace: str) -> bool:
        if not namespace:
            return "*" in self.patterns
        return any(glob_match(p, namespace) for p in self.patterns)


@dataclass(frozen=True)
class ResourceCheck:
    """What a caller must be allowed in a namespace: verb on group/resource[/subresource]."""

    verb: str = "get"
    resource: str = "pods"
    group: str = ""
    subresource: str = ""

    @classmethod
    def parse(cls, verb: str, resource: str) -> ResourceCheck:
        """`pods`, `pods/log`, `deployments.apps` (kubectl's resource.group form)."""
        name, _, group = resource.partition(".")
        name, _, subresource = name.partition("/")
        return cls(verb, name, group, subresource)

    def attributes(self, namespace: str) -> dict[str, str]:
        attributes = {"verb": self.verb, "resource": self.resource, "group": self.group}
        if self.subresource:
            attributes["subresource"] = self.subresource
        if namespace:
            attributes["namespace"] = namespace
        return attributes


_Key = tuple[Identity, str]


class SubjectAccessReviewAuthorizer:
    """Asks the API server (SubjectAccessReview) whether the caller may read a namespace.

    The server's service account needs `create` on `subjectaccessreviews`.
    Every request's timeout is `timeout`, clipped to the caller's deadline.
    """

    def __init__(
        self,
        api_server_url: str,
        ca_file: str | None,
        sa_token_file: str,
        check: ResourceCheck | None = None,
        *,
        cache_ttl: float = 10.0,
        timeout: float = 2.0,
        max_cache_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = ReviewClient(
            api_server_url.rstrip("/") + SAR_PATH, ca_file, sa_token_file, timeout
        )
        self.check = check or ResourceCheck()
        self._ttl = cache_ttl
        self._cache: ReviewCache[_Key, bool] = ReviewCache(max_cache_entries, clock)
        self._pending: dict[_Key, asyncio.Task[bool]] = {}

    async def allowed(self, identity: Identity, namespace: str) -> bool:
        key = (identity, namespace)
        cached = self._cache.get(key)
        if cached is not None:
            return cached[0]
        task = self._pending.get(key)
        if task is None:
            # Concurrent calls of one caller for one namespace (an alert
            # storm) share one review, bounded by the first caller's deadline.
            task = asyncio.ensure_future(self._decide(key))
            self._pending[key] = task
            task.add_done_callback(lambda _: self._pending.pop(key, None))
        try:
            verdict = await asyncio.shield(task)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning(
                "SubjectAccessReview failed; refusing the call",
                extra={"error_type": type(exc).__name__},
            )
            raise AuthorizationUnavailable(
                "cannot check the caller's permissions: the Kubernetes API did not answer"
            ) from None
        return verdict

    async def _decide(self, key: _Key) -> bool:
        verdict = await self._review(*key)
        # Remembered before the pending entry goes: no gap for a new review.
        if self._ttl > 0:
            self._cache.put(key, verdict, self._ttl)
        return verdict

    async def _review(self, identity: Identity, namespace: str) -> bool:
        spec: dict[str, Any] = {
            "user": identity.subject,
            "groups": list(identity.groups),
            "resourceAttributes": self.check.attributes(namespace),
        }
        if identity.uid:
            spec["uid"] = identity.uid
        if identity.extra:
            spec["extra"] = {key: list(values) for key, values in identity.extra}
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        status = await self._api.create(body, AuthorizationError)
        # An evaluationError without `allowed` is a refusal, as the API server
        # itself treats it (a binding to a missing role must not look like an outage).
        return status.get("allowed") is True and status.get("denied") is not True

    async def close(self) -> None:
        await self._api.close()


class AuthorizationError(Exception):
    """The SubjectAccessReview API did not give a usable answer."""


class CallerPolicy:
    """Makes each request's `Caller`: authorized for the namespace it asks about
    (when authorizers are set), confined to it, with the deployment's exposure.

    `reports` authorizes outcome reports (`report_needs` says what it asks
    for); without it, reports are authorized like investigations. Without
    authorizers every caller is allowed and unconfined.
    """

    def __init__(
        self,
        exposure: Exposure = "full",
        investigations: NamespaceAuthorizer | None = None,
        reports: NamespaceAuthorizer | None = None,
        report_needs: str = "",
    ) -> None:
        self._exposure = exposure
        self._investigations = investigations
        self._reports = reports
        self._report_needs = report_needs

    async def investigating(
        self, identity: Identity | None, namespace: str, budget: Budget
    ) -> Caller:
        """The caller of an investigation of `namespace`; PermissionDeniedError when
        it may not read it, AuthorizationUnavailableError when that cannot be told."""
        if not namespace:
            denied = "the caller may not investigate cluster-scoped incidents (no namespace)"
        else:
            denied = f"the caller may not investigate namespace {namespace!r}"
        return await self._caller(self._investigations, identity, namespace, budget, denied)

    async def reporting(self, identity: Identity | None, namespace: str, budget: Budget) -> Caller:
        """The caller of an outcome report on a target in `namespace` (refused as above)."""
        if self._reports is None:
            return await self.investigating(identity, namespace, budget)
        where = f"namespace {namespace!r}" if namespace else "cluster-scoped targets (no namespace)"
        denied = (
            f"the caller may not report remediation outcomes for {where}"
            f" (needs {self._report_needs})"
        )
        return await self._caller(self._reports, identity, namespace, budget, denied)

    async def _caller(
        self,
        authorizer: NamespaceAuthorizer | None,
        identity: Identity | None,
        namespace: str,
        budget: Budget,
        denied: str,
    ) -> Caller:
        name = identity.subject if identity is not None else ""
        if authorizer is None:
            return Caller(name, None, self._exposure)
        if identity is None:  # authorization without authentication: refuse
            raise PermissionDeniedError(denied)
        try:
            with budget_scope(budget):
                allowed = await authorizer.allowed(identity, namespace)
        except AuthorizationUnavailable as exc:
            if budget.remaining() < SPENT_SECONDS:
                raise BudgetExhaustedError("the caller's deadline ran out") from None
            raise AuthorizationUnavailableError(f"{exc}; retry later") from None
        if not allowed:
            raise PermissionDeniedError(denied)
        # Its investigation reads only this namespace ("": cluster-scoped, allowed in all).
        return Caller(name, namespace or None, self._exposure)

    async def close(self) -> None:
        for authorizer in (self._investigations, self._reports):
            close = getattr(authorizer, "close", None)
            if close is not None:
                await close()
