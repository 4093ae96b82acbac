"""`WorkflowCatalog` over the Data Storage REST API (BR-HAPI-047).

Design notes: docs/internals.md (`adapters/catalog/datastorage.py`).
"""

from __future__ import annotations

import logging
from typing import TypeVar

from pydantic import BaseModel

from hapi_grpc.adapters.cache import CatalogCache, Kind, search_key, workflow_key
from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.datastorage.bodies import clean_text
from hapi_grpc.adapters.datastorage.client import (
    DEFAULT_MAX_CONNECTIONS,
    DataStorageClient,
    DataStorageHTTPError,
    workflow_path,
)
from hapi_grpc.adapters.http import RetryPolicy
from hapi_grpc.adapters.http.transport import Transport
from hapi_grpc.domain.catalog import (
    SearchQuery,
    SearchResult,
    Workflow,
    WorkflowSchema,
    is_valid_workflow_id,
)
from hapi_grpc.domain.errors import FieldViolation, InvalidRequestError

__all__ = ["DataStorageCatalog", "DataStorageHTTPError", "workflow_path"]

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)


class DataStorageCatalog:
    """The `WorkflowCatalog` port over one Data Storage.

    `breaker` None gives a default `RateCircuitBreaker("datastorage")`;
    `cache` None disables caching. `breaker` and `cache` passed in are shared
    objects and are not closed by `close()`; `transport` replaces the network
    in tests.
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
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        transport: Transport | None = None,
    ) -> None:
        self._breaker = breaker or RateCircuitBreaker("datastorage")
        self.client = DataStorageClient(
            base_url,
            request_timeout=request_timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            max_connections=max_connections,
            breaker=self._breaker,
            transport=transport,
            log=log,
        )
        self._cache = cache

    @property
    def breaker(self) -> RateCircuitBreaker:
        return self._breaker

    @property
    def policy(self) -> RetryPolicy:
        return self.client.policy

    # -- the port ---------------------------------------------------------------

    async def search(self, query: SearchQuery) -> SearchResult:
        """`POST /api/v1/workflows/search`."""

        async def fetch() -> SearchResult:
            result = await self.client.search(query)
            for entry in result.refused:  # left out; the other entries still answer
                log.warning(
                    "Data Storage search entry refused",
                    extra={"entry": clean_text(entry, 400)},
                )
            return result

        if self._cache is None:
            return await fetch()
        key = search_key(self.client.base_url, query)
        return await self._cache.get_or_fetch("search", key, SearchResult, fetch)

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        """`GET /api/v1/workflows/{workflow_id}/schema`."""
        return await self._by_id("schema", workflow_id, WorkflowSchema)

    async def get_workflow(self, workflow_id: str) -> Workflow:
        """`GET /api/v1/workflows/{workflow_id}`."""
        return await self._by_id("workflow", workflow_id, Workflow)

    async def close(self) -> None:
        """Close the connections; later calls fail."""
        await self.client.close()

    # -- internals ----------------------------------------------------------------

    async def _by_id(self, endpoint: Kind, workflow_id: str, model: type[M]) -> M:
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

        async def fetch() -> M:
            return await self.client.workflow_part(endpoint, workflow_id, model)

        if self._cache is None:
            return await fetch()
        key = workflow_key(endpoint, self.client.base_url, workflow_id)
        return await self._cache.get_or_fetch(endpoint, key, model, fetch)
