"""One investigation's use of the workflow catalog.

Design notes: docs/internals.md (`domain/toolsets/workflow_catalog/session.py`).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hapi_grpc.domain.catalog import SearchFilters, SearchHit, SearchQuery, WorkflowCatalog
from hapi_grpc.domain.deadline import current_budget, request_timeout
from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    CatalogUnavailableError,
    InvalidRequestError,
    WorkflowNotFoundError,
)
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.toolsets.arguments_gen import SearchWorkflowCatalogArgs

__all__ = ["CatalogFailure", "CatalogSession", "FailureKind", "SearchContext"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SearchContext:
    """What the engine appends to every catalog search; never shown to the model."""

    remediation_id: str = ""
    environment: str = ""
    priority: str = ""
    custom_labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    detected_labels: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_incident(cls, incident: Incident) -> SearchContext:
        return cls(
            remediation_id=incident.remediation_id,
            environment=incident.business.environment,
            priority=incident.business.priority,
            custom_labels={k: tuple(v) for k, v in incident.enrichment.custom_labels.items()},
            detected_labels=dict(incident.enrichment.detected_labels),
        )

    def query(self, args: SearchWorkflowCatalogArgs, top_k: int) -> SearchQuery:
        """The catalog query for the model's search `args` plus this context."""
        return SearchQuery(
            query=args.query,
            filters=SearchFilters(
                signal_type=args.signal_type,
                severity=args.severity,
                component=args.component,
                environment=self.environment or None,
                priority=self.priority or None,
                custom_labels=dict(self.custom_labels),
                detected_labels=dict(self.detected_labels),
            ),
            top_k=top_k,
            min_score=args.similarity_threshold,
            remediation_id=self.remediation_id,
        )


class FailureKind(enum.Enum):
    NO_TIME = "no_time"  # the investigation's budget is spent
    TIMEOUT = "timeout"  # the catalog did not answer within the call's timeout
    NOT_FOUND = "not_found"  # the workflow is not (or no longer) in the catalog
    INVALID = "invalid"  # the request itself was refused (bad id, too many parameters)
    UNAVAILABLE = "unavailable"  # Data Storage down, circuit open
    DEFECT = "defect"  # an adapter failed unexpectedly (logged with its traceback)


class CatalogFailure(Exception):
    """A catalog request that gave no answer, classified once."""

    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class CatalogSession:
    """The catalog as one investigation sees it (see module docstring)."""

    __slots__ = (
        "catalog",
        "context",
        "failures",
        "returned_workflows",
        "searches_ok",
    )

    def __init__(self, catalog: WorkflowCatalog, context: SearchContext) -> None:
        self.catalog = catalog
        self.context = context
        # Workflows the catalog returned in this investigation, by id.
        self.returned_workflows: dict[str, SearchHit] = {}
        self.searches_ok = 0
        self.failures = 0

    def remember(self, hits: list[SearchHit]) -> None:
        for hit in hits:
            self.returned_workflows.setdefault(hit.workflow_id, hit)
        self.searches_ok += 1

    async def call(self, work: Awaitable[T], timeout: float) -> T:
        """Await `work` within `timeout` (clipped to the budget in scope).

        Raises CatalogFailure for every way it can fail; failures of the
        catalog itself are counted.
        """
        try:
            timeout = request_timeout(timeout)
        except BudgetExhaustedError:
            _close(work)
            raise CatalogFailure(FailureKind.NO_TIME, "no time left") from None
        try:
            async with asyncio.timeout(timeout):
                return await work
        except (TimeoutError, BudgetExhaustedError):
            budget = current_budget()
            if budget is not None and budget.expired:
                raise CatalogFailure(FailureKind.NO_TIME, "no time left") from None
            self.failures += 1
            raise CatalogFailure(
                FailureKind.TIMEOUT,
                f"the workflow catalog did not answer within {timeout:.3g}s",
            ) from None
        except WorkflowNotFoundError as exc:
            raise CatalogFailure(FailureKind.NOT_FOUND, exc.workflow_id) from None
        except InvalidRequestError as exc:
            raise CatalogFailure(FailureKind.INVALID, exc.message) from None
        except CatalogUnavailableError as exc:
            self.failures += 1
            logger.warning("workflow catalog unavailable: %s", exc.message)
            raise CatalogFailure(
                FailureKind.UNAVAILABLE, "the workflow catalog is unavailable"
            ) from None
        except Exception:
            # A defect in an adapter must not end the investigation: the model
            # goes on without the catalog, and the failure is logged.
            self.failures += 1
            logger.exception("workflow catalog call failed unexpectedly")
            raise CatalogFailure(FailureKind.DEFECT, "the workflow catalog failed") from None


def _close(work: Awaitable[Any]) -> None:
    close = getattr(work, "close", None)
    if close is not None:
        close()
