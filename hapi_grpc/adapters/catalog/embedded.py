"""The embedded workflow catalog: the default when no Data Storage is configured.

It answers the `WorkflowCatalog` port in process, with the search semantics of
`hapi_grpc.adapters.catalog.scoring` (which the Data Storage test server in
`hapi_grpc.adapters.datastorage_server` serves over REST as well).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hapi_grpc.adapters.catalog.loader import (
    catalog_problems,
    load_bundled_catalog,
    load_catalog_file,
)
from hapi_grpc.adapters.catalog.scoring import SearchIndex, version_key
from hapi_grpc.domain.catalog import SearchQuery, SearchResult, Workflow, WorkflowSchema
from hapi_grpc.domain.errors import WorkflowNotFoundError


class EmbeddedCatalog:
    """An immutable in-memory catalog implementing `WorkflowCatalog`.

    A workflow id may appear in several versions; `get_workflow`,
    `get_schema` and `search` only see the highest one (versions compare
    numerically part by part, '1.10.0' > '1.9.0', a pre-release such as
    '2.0.0-rc1' below its release), mirroring Data Storage, whose schema
    endpoint is keyed by id alone.

    Returned values are frozen models. `get_workflow` hands out a deep copy,
    so even its label dictionaries cannot alter the catalog. `get_schema` and
    search hits share the catalog's frozen schema objects: they sit on the
    hot path of every validation, and sharing the same object also lets the
    parameter validator reuse its compiled form of the schema.

    `index`, given with `workflows` already checked, searches in place of an index
    of their latest versions: a catalog that searches another view of its
    workflows (`kubernetes.catalog_view`).
    """

    def __init__(self, workflows: Sequence[Workflow], index: SearchIndex | None = None) -> None:
        problems = catalog_problems(workflows) if index is None else []
        if problems:
            raise ValueError("invalid workflow catalog: " + "; ".join(problems[:10]))
        latest: dict[str, Workflow] = {}
        for workflow in workflows:
            current = latest.get(workflow.workflow_id)
            if current is None or version_key(workflow.version) > version_key(current.version):
                latest[workflow.workflow_id] = workflow
        self._all: tuple[Workflow, ...] = tuple(workflows)
        self._latest = latest
        self._schemas = {workflow_id: wf.parameter_schema() for workflow_id, wf in latest.items()}
        self._index = SearchIndex(latest.values()) if index is None else index

    @classmethod
    def from_file(cls, path: str | Path | None = None) -> EmbeddedCatalog:
        """Load a YAML/JSON catalog file, or the bundled catalog when `path` is None.

        Raises `CatalogFileError` (a ValueError) when the file is unusable.
        """
        return cls(load_bundled_catalog() if path is None else load_catalog_file(path))

    def __len__(self) -> int:
        """Number of distinct workflow ids."""
        return len(self._latest)

    @property
    def workflows(self) -> tuple[Workflow, ...]:
        """Every record, all versions, in catalog order."""
        return self._all

    def search_sync(self, query: SearchQuery) -> SearchResult:
        """`search` without the coroutine, for callers outside an event loop."""
        return self._index.search(query)

    async def search(self, query: SearchQuery) -> SearchResult:
        return self.search_sync(query)

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        schema = self._schemas.get(workflow_id)
        if schema is None:
            raise WorkflowNotFoundError(workflow_id)
        return schema

    async def get_workflow(self, workflow_id: str) -> Workflow:
        workflow = self._latest.get(workflow_id)
        if workflow is None:
            raise WorkflowNotFoundError(workflow_id)
        return workflow.model_copy(deep=True)

    async def close(self) -> None:
        """Nothing to release; present for the port."""
