"""`WorkflowCatalog` over the Data Storage REST API (BR-HAPI-047).

Design notes: docs/internals.md (`adapters/catalog/datastorage.py`).
"""

from __future__ import annotations

import logging
from typing import TypeVar

from pydantic import BaseModel

from hapi_grpc.adapters.cache import CatalogCache, Kind, search_key, workflow_key
from hapi_grpc.adapters.datastorage.bodies import clean_text
from hapi_grpc.adapters.datastorage.client import (
    DataStorageClient,
    DataStorageHTTPError,
    workflow_path,
)
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
    """The `WorkflowCatalog` port over one Data Storage, through `client` (closed by
    `close()`). `cache` None disables caching; a cache passed in is shared and is not
    closed by `close()`.
    """

    def __init__(self, client: DataStorageClient, *, cache: CatalogCache | None = None) -> None:
        self.client = client
        self._cache = cache

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
