"""`WorkflowCatalog` over the Data Storage REST API (BR-HAPI-047).

One logical call = cache lookup, then (on a miss, shared by concurrent
callers) the circuit breaker, then the HTTP request under the shared retry
policy (`hapi_grpc.adapters.http_policy`, with `datastorage_retry_policy`):
each attempt's connect/read/total timeouts are clipped to the caller's
budget, so no request outlives the caller's deadline, and cancelling the
caller (with a cache: the last caller waiting for a shared fetch) aborts the
request at once. The connection pool holds `max_connections` connections
(HAPI_DATA_STORAGE_MAX_CONNECTIONS); waiting for one counts against the
attempt's timeout.

Error mapping:
- 404 on schema/workflow -> `WorkflowNotFoundError` (the service is healthy);
- timeouts, connection errors, truncated bodies, 5xx and 429 -> retried with
  exponential backoff and full jitter (never sooner than `Retry-After`), then
  `CatalogUnavailableError` naming the endpoint and the last cause;
- other non-2xx -> `DataStorageHTTPError` (a `CatalogUnavailableError`) with
  the status and the problem's title/detail, not retried;
- a 2xx that breaks the contract -> `CatalogContractError` naming the problem;
- our own deadline running out -> `BudgetExhaustedError`.
The breaker counts every outcome except success, not-found, refused ids, our
own deadline and cancellation as a failure of the one logical call.
Messages never carry the base URL (it may hold credentials) or whole bodies;
problem texts pass through `hapi_grpc.domain.sensitive.redact`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import aiohttp
from pydantic import BaseModel
from yarl import URL

from hapi_grpc.adapters.cache import CatalogCache, search_key, workflow_key
from hapi_grpc.adapters.catalog.datastorage_body import (
    ContractViolation,
    check_workflow_id,
    clean_text,
    parse_body,
)
from hapi_grpc.adapters.catalog.datastorage_exchange import exchange, record
from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.http_policy import (
    Attempt,
    RetryPolicy,
    run_attempts,
)
from hapi_grpc.domain.catalog import (
    SearchQuery,
    SearchResult,
    Workflow,
    WorkflowSchema,
    is_valid_workflow_id,
)
from hapi_grpc.domain.errors import (
    CatalogContractError,
    CatalogUnavailableError,
    FieldViolation,
    InvalidRequestError,
    WorkflowNotFoundError,
)
from hapi_grpc.domain.sensitive import register_secret
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

log = logging.getLogger(__name__)

Endpoint = Literal["search", "schema", "workflow"]
M = TypeVar("M", bound=BaseModel)

SEARCH_PATH = "/api/v1/workflows/search"
_DESCRIPTIONS: dict[Endpoint, str] = {
    "search": f"search (POST {SEARCH_PATH})",
    "schema": "schema (GET /api/v1/workflows/{workflow_id}/schema)",
    "workflow": "workflow (GET /api/v1/workflows/{workflow_id})",
}

# Connections to Data Storage at most. A catalog request takes milliseconds,
# so 100 connections serve thousands of requests a second, far more than the
# 2 (cached) lookups per investigation of an alert storm need.
DEFAULT_MAX_CONNECTIONS = 100


def workflow_path(workflow_id: str, suffix: str = "") -> str:
    """URL path of one workflow; the id is percent-encoded as a single segment.

    Ids are validated before they get here; encoding as well means that even
    an id that slipped through could not address another path ('/', '?', '#').
    """
    return f"/api/v1/workflows/{quote(workflow_id, safe='')}{suffix}"


class DataStorageHTTPError(CatalogUnavailableError):
    """Data Storage refused a request with a non-retryable status (4xx other than 404)."""

    def __init__(self, endpoint: Endpoint, status: int, title: str = "", detail: str = "") -> None:
        problem = ": ".join(part for part in (title, detail) if part)
        message = f"Data Storage {_DESCRIPTIONS[endpoint]} answered HTTP {status}"
        super().__init__(f"{message}: {problem}" if problem else message)
        self.endpoint = endpoint
        self.status = status
        self.title = title
        self.detail = detail


def datastorage_retry_policy(
    request_timeout: float, max_retries: int, backoff_base: float, backoff_max: float
) -> RetryPolicy:
    """Data Storage's retry policy.

    An internal service: a Retry-After beyond 30 s means it is not coming
    back soon, so give up rather than hold the caller. A catalog lookup
    answers in milliseconds, so an attempt is worth starting with 10 ms left.
    """
    return RetryPolicy(
        attempt_timeout=request_timeout,
        max_retries=max_retries,
        backoff_base=backoff_base,
        backoff_cap=backoff_max,
        retry_after_cap=30.0,
        min_attempt_seconds=0.01,
    )


class DataStorageCatalog:
    """Async Data Storage client implementing the `WorkflowCatalog` port.

    `breaker` None gives a default `RateCircuitBreaker("datastorage")`;
    `cache` None disables caching. A `session` passed in is used as is and
    not closed by `close()`; otherwise one pooled session (at most
    `max_connections` connections) is created on first use, inside the
    running loop. `breaker` and `cache` passed in are shared objects and are
    not closed either.
    """

    def __init__(
        self,
        base_url: str,
        *,
        request_timeout: float = 2.0,
        max_retries: int = 3,
        backoff_base: float = 0.1,
        backoff_max: float = 2.0,
        breaker: RateCircuitBreaker | None = None,
        cache: CatalogCache | None = None,
        session: aiohttp.ClientSession | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        url = URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("Data Storage base_url must be an absolute http(s) URL")
        if max_connections < 1:
            raise ValueError("max_connections must be >= 1")
        if url.password:
            register_secret(url.password)
        self._base_url = str(url).rstrip("/")
        self._timeout = request_timeout
        self.policy = datastorage_retry_policy(
            request_timeout, max_retries, backoff_base, backoff_max
        )
        self._breaker = breaker or RateCircuitBreaker("datastorage")
        self._cache = cache
        self._session = session
        self._owns_session = session is None
        self._max_connections = max_connections
        self._closed = False

    @property
    def breaker(self) -> RateCircuitBreaker:
        return self._breaker

    # -- the port ---------------------------------------------------------------

    async def search(self, query: SearchQuery) -> SearchResult:
        """`POST /api/v1/workflows/search`."""

        async def fetch() -> SearchResult:
            result = await self._breaker.call(
                lambda: self._call("search", "POST", SEARCH_PATH, SearchResult, query.to_wire())
            )
            for entry in result.refused:  # left out; the other entries still answer
                log.warning(
                    "Data Storage search entry refused",
                    extra={"entry": clean_text(entry, 400)},
                )
            return result

        if self._cache is None:
            return await fetch()
        key = search_key(self._base_url, query)
        return await self._cache.get_or_fetch("search", key, SearchResult, fetch)

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        """`GET /api/v1/workflows/{workflow_id}/schema`."""
        return await self._by_id("schema", workflow_id, WorkflowSchema, "/schema")

    async def get_workflow(self, workflow_id: str) -> Workflow:
        """`GET /api/v1/workflows/{workflow_id}`."""
        return await self._by_id("workflow", workflow_id, Workflow, "")

    async def close(self) -> None:
        """Close the session this instance created; later calls fail."""
        self._closed = True
        if self._owns_session and self._session is not None:
            await self._session.close()
        self._session = None

    # -- internals ----------------------------------------------------------------

    async def _by_id(self, endpoint: Endpoint, workflow_id: str, model: type[M], suffix: str) -> M:
        if not isinstance(workflow_id, str) or not is_valid_workflow_id(workflow_id):
            raise InvalidRequestError(
                "invalid workflow id",
                [
                    FieldViolation(
                        "workflow_id",
                        "must be 1-128 characters of letters, digits, '.', '_' or '-', "
                        "start with a letter or digit and not contain '..'",
                        "workflow_id.pattern",
                    )
                ],
            )
        path = workflow_path(workflow_id, suffix)

        async def fetch() -> M:
            return await self._breaker.call(
                lambda: self._call(endpoint, "GET", path, model, None, workflow_id)
            )

        if self._cache is None:
            return await fetch()
        key = workflow_key(endpoint, self._base_url, workflow_id)
        return await self._cache.get_or_fetch(endpoint, key, model, fetch)

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise CatalogUnavailableError("the Data Storage client is closed")
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                # Never aiohttp's 300 s default: every attempt sets its own
                # timeouts, and this is only the backstop.
                timeout=aiohttp.ClientTimeout(total=self._timeout, connect=self._timeout),
                headers={"Accept": "application/json"},
                trust_env=False,
            )
        return self._session

    async def _call(
        self,
        endpoint: Endpoint,
        method: str,
        path: str,
        model: type[M],
        body: Mapping[str, Any] | None,
        workflow_id: str | None = None,
    ) -> M:
        """One logical call: the first attempt plus at most `max_retries` retries."""
        with span(f"datastorage.{endpoint}"):
            url = URL(self._base_url + path, encoded=True)

            async def send(attempt: Attempt) -> M:
                return await self._attempt(endpoint, method, url, body, model, attempt, workflow_id)

            return await run_attempts(
                self.policy,
                f"Data Storage {_DESCRIPTIONS[endpoint]}",
                send,
                fail=CatalogUnavailableError,
                log=log,
                on_retry=metrics.DATASTORAGE_RETRIES.labels(endpoint=endpoint).inc,
            )

    async def _attempt(
        self,
        endpoint: Endpoint,
        method: str,
        url: URL,
        body: Mapping[str, Any] | None,
        model: type[M],
        attempt: Attempt,
        workflow_id: str | None,
    ) -> M:
        reply = await exchange(self._get_session(), endpoint, method, url, attempt.timeout, body)
        if reply.ok:
            try:
                value = parse_body(reply.raw, reply.over, reply.content_type, model)
                if workflow_id is not None:
                    check_workflow_id(value, workflow_id)
            except ContractViolation as exc:
                record(endpoint, "contract_error", reply.started)
                # Not retried: a broken answer is usually a version mismatch
                # that repeats; operators need to see it.
                log.warning("Data Storage %s response breaks the contract: %s", endpoint, exc)
                raise CatalogContractError(f"{endpoint} response: {exc}") from None
            record(endpoint, "2xx", reply.started)
            return value
        if reply.status == 404 and workflow_id is not None:
            raise WorkflowNotFoundError(workflow_id)
        title, detail = reply.problem()
        raise DataStorageHTTPError(endpoint, reply.status, title, detail)
