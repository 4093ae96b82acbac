"""`DataStorageClient`: the Data Storage REST contract, for the catalog and the history.

Design notes: docs/internals.md (`adapters/datastorage/client.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.datastorage.bodies import (
    MAX_RESPONSE_BYTES,
    ContextBody,
    ContractViolation,
    EffectivenessBody,
    check_workflow_id,
    go_duration,
    parse_body,
    problem_text,
)
from hapi_grpc.adapters.http.client import HttpClient, HttpUnavailable
from hapi_grpc.adapters.http.retry import RetryPolicy, TransientError, parse_retry_after
from hapi_grpc.adapters.http.transport import Response
from hapi_grpc.domain.catalog import SearchQuery, SearchResult
from hapi_grpc.domain.errors import (
    CatalogContractError,
    CatalogUnavailableError,
    HistoryUnavailableError,
    WorkflowNotFoundError,
)
from hapi_grpc.domain.history import Windows
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "SEARCH_PATH",
    "DataStorageClient",
    "DataStorageHTTPError",
    "workflow_path",
]

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

SEARCH_PATH = "/api/v1/workflows/search"
CONTEXT_PATH = "/api/v1/remediation-history/context"
EFFECTIVENESS_PATH = "/api/v1/effectiveness/"
DESCRIPTIONS = {
    "search": f"search (POST {SEARCH_PATH})",
    "schema": "schema (GET /api/v1/workflows/{workflow_id}/schema)",
    "workflow": "workflow (GET /api/v1/workflows/{workflow_id})",
    "history": f"history (GET {CONTEXT_PATH})",
    "effectiveness": "effectiveness (GET /api/v1/effectiveness/{remediation_id})",
}
# Connections to Data Storage at most. A request takes milliseconds, so 100
# connections serve thousands a second, far more than the 2 (cached) lookups
# per investigation of an alert storm need.
DEFAULT_MAX_CONNECTIONS = 100
MAX_ERROR_BODY_BYTES = 64 * 1024


def workflow_path(workflow_id: str, suffix: str = "") -> str:
    """URL path of one workflow; the id is percent-encoded as a single segment.

    Ids are validated before they get here; encoding as well means that even
    an id that slipped through could not address another path ('/', '?', '#').
    """
    return f"/api/v1/workflows/{quote(workflow_id, safe='')}{suffix}"


class DataStorageHTTPError(CatalogUnavailableError):
    """Data Storage refused a catalog request with a non-retryable status (4xx other
    than 404)."""

    def __init__(self, endpoint: str, status: int, title: str = "", detail: str = "") -> None:
        problem = ": ".join(part for part in (title, detail) if part)
        message = f"Data Storage {DESCRIPTIONS[endpoint]} answered HTTP {status}"
        super().__init__(f"{message}: {problem}" if problem else message)
        self.endpoint = endpoint
        self.status = status
        self.title = title
        self.detail = detail


def _observer(endpoint: str) -> Callable[[Response | None, BaseException | None, float], None]:
    """Counts each attempt by endpoint and outcome, with its latency."""
    requests = metrics.DATASTORAGE_REQUESTS
    latency = metrics.DATASTORAGE_LATENCY.labels(endpoint=endpoint)

    def observe(response: Response | None, error: BaseException | None, seconds: float) -> None:
        if response is None:
            if isinstance(error, TimeoutError):
                status = "timeout"
            elif isinstance(error, HttpUnavailable):
                status = "connection_error"
            else:
                return  # cancelled, or refused before sending: no request to count
        elif response.ok:
            status = "contract_error" if error is not None else "2xx"
        else:
            status = f"{response.status // 100}xx" if 300 <= response.status < 600 else "5xx"
        requests.labels(endpoint=endpoint, status=status).inc()
        latency.observe(seconds)

    return observe


class DataStorageClient:
    """One Data Storage (docs/internals.md); `breaker` guards every logical call
    (None: none)."""

    def __init__(
        self,
        base_url: str,
        *,
        request_timeout: float = 2.0,
        max_retries: int = 3,
        backoff_base: float = 0.1,
        backoff_max: float = 2.0,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        breaker: RateCircuitBreaker | None = None,
    ) -> None:
        try:
            self.http = HttpClient(
                base_url,
                name="Data Storage",
                timeout=request_timeout,
                headers={"Accept": "application/json"},
                max_connections=max_connections,
                # An internal service: a Retry-After beyond 30 s means it is not coming
                # back soon, so give up rather than hold the caller. A lookup answers in
                # milliseconds, so an attempt is worth starting with 10 ms left.
                retry=RetryPolicy(
                    attempt_timeout=request_timeout,
                    max_retries=max_retries,
                    backoff_base=backoff_base,
                    backoff_cap=backoff_max,
                    retry_after_cap=30.0,
                    min_attempt_seconds=0.01,
                ),
                breaker=breaker,
                log=log,
            )
        except ValueError as exc:
            raise ValueError(f"Data Storage base_url: {exc}") from None
        self.closed = False

    @property
    def base_url(self) -> str:
        return self.http.base_url

    async def close(self) -> None:
        """Close the connections; later calls fail."""
        self.closed = True
        await self.http.close()

    async def get_json(
        self,
        endpoint: str,
        method: str,
        path: str,
        model: type[M],
        *,
        fail: type[Exception],
        contract: Callable[[str], Exception],
        refused: Callable[[Response], Exception | None],
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, str] | None = None,
        workflow_id: str | None = None,
    ) -> M | None:
        """One logical call to `endpoint`: its 2xx answer as `model`. A refusal is
        answered at once: `refused(response)` is the error to raise (None: "none",
        returned); `fail` is the error for giving up, `contract(message)` the one for
        a broken answer."""
        if self.closed:
            raise fail("the Data Storage client is closed")
        what = f"Data Storage {DESCRIPTIONS.get(endpoint, endpoint)}"

        def read(response: Response) -> M | None:
            if response.ok:
                try:
                    value = parse_body(response, model)
                    if workflow_id is not None:
                        check_workflow_id(value, workflow_id)
                except ContractViolation as exc:
                    log.warning("Data Storage %s response breaks the contract: %s", endpoint, exc)
                    raise contract(f"{endpoint} response: {exc}") from None
                return value
            if response.status == 429 or response.status >= 500:
                title, _ = problem_text(response.body)
                summary = f"HTTP {response.status}" + (f" ({title})" if title else "")
                raise TransientError(
                    summary, parse_retry_after(response.headers.get("Retry-After"))
                )
            error = refused(response)
            if error is not None:
                raise error
            return None

        with span(f"datastorage.{endpoint}"):
            return await self.http.call(
                method,
                path,
                read,
                what=what,
                fail=fail,
                params=query,
                json_body=body,
                limit=MAX_RESPONSE_BYTES,
                error_limit=MAX_ERROR_BODY_BYTES,
                observe=_observer(endpoint),
                on_retry=metrics.DATASTORAGE_RETRIES.labels(endpoint=endpoint).inc,
            )

    async def search(self, query: SearchQuery) -> SearchResult:
        """`POST /api/v1/workflows/search`."""
        return await self._catalog("search", "POST", SEARCH_PATH, SearchResult, query.to_wire())

    async def workflow_part(self, endpoint: str, workflow_id: str, model: type[M]) -> M:
        """`GET /api/v1/workflows/{id}` (`workflow`) or its `/schema` (`schema`)."""
        suffix = "/schema" if endpoint == "schema" else ""
        path = workflow_path(workflow_id, suffix)
        return await self._catalog(endpoint, "GET", path, model, workflow_id=workflow_id)

    async def history_context(
        self, target: TargetResource, current_spec_hash: str, windows: Windows
    ) -> ContextBody:
        """`GET /api/v1/remediation-history/context` of one target."""
        query = {
            "targetKind": target.kind,
            "targetName": target.name,
            "targetNamespace": target.namespace,
            "currentSpecHash": current_spec_hash,
            "tier1Window": go_duration(windows.tier1),
            "tier2Window": go_duration(windows.tier2),
        }
        found = await self._history("history", CONTEXT_PATH, ContextBody, query)
        assert found is not None  # the context endpoint never answers "none"
        return found

    async def effectiveness(self, remediation_id: str) -> EffectivenessBody | None:
        """`GET /api/v1/effectiveness/{id}`; None when Data Storage has none."""
        path = EFFECTIVENESS_PATH + quote(remediation_id, safe="")
        return await self._history("effectiveness", path, EffectivenessBody, None)

    async def _catalog(
        self,
        endpoint: str,
        method: str,
        path: str,
        model: type[M],
        body: Mapping[str, Any] | None = None,
        workflow_id: str | None = None,
    ) -> M:
        def refused(response: Response) -> Exception:
            if response.status == 404 and workflow_id is not None:
                return WorkflowNotFoundError(workflow_id)
            return DataStorageHTTPError(endpoint, response.status, *problem_text(response.body))

        found = await self.get_json(
            endpoint,
            method,
            path,
            model,
            fail=CatalogUnavailableError,
            contract=CatalogContractError,
            refused=refused,
            body=body,
            workflow_id=workflow_id,
        )
        assert found is not None  # every refusal raises
        return found

    async def _history(
        self, endpoint: str, path: str, model: type[M], query: Mapping[str, str] | None
    ) -> M | None:
        def refused(response: Response) -> Exception | None:
            if response.status == 404 and endpoint == "effectiveness":
                return None
            problem = ": ".join(part for part in problem_text(response.body) if part)
            return HistoryUnavailableError(
                f"Data Storage {endpoint} answered HTTP {response.status}"
                + (f": {problem}" if problem else "")
            )

        try:
            return await self.get_json(
                endpoint,
                "GET",
                path,
                model,
                fail=HistoryUnavailableError,
                contract=HistoryUnavailableError,
                refused=refused,
                query=query,
            )
        except CatalogUnavailableError as exc:  # the breaker is open
            raise HistoryUnavailableError(str(exc)) from None
