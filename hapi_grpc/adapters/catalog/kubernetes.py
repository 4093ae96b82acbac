"""`WorkflowCatalog` read from the cluster: RemediationWorkflow and ActionType resources.

Design notes: docs/internals.md (`adapters/catalog/kubernetes.py`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.catalog.scoring import SearchIndex
from hapi_grpc.adapters.catalog.workflow_resources import (
    ACTION_TYPES,
    ACTIVE,
    WORKFLOWS,
    ActionTypeResource,
    WorkflowResource,
    read_action_type,
    read_workflow,
)
from hapi_grpc.adapters.kubernetes.informer import Informer, InformerLimits
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader, ResourceType
from hapi_grpc.domain.catalog import (
    SearchQuery,
    SearchResult,
    Workflow,
    WorkflowSchema,
)
from hapi_grpc.domain.errors import CatalogUnavailableError
from hapi_grpc.observability import metrics

__all__ = ["KubernetesCatalog", "Offer", "catalog_view", "offered"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Offer:
    """What a catalog built from the resources read offers, and why not the rest."""

    workflows: list[WorkflowResource]
    counts: Counter[str]  # offered, inactive, invalid, duplicate
    problems: frozenset[str]  # one line per resource left out for a problem


def offered(
    workflows: Sequence[WorkflowResource], action_types: Sequence[ActionTypeResource]
) -> Offer:
    """The workflows to offer: Active, of an action type whose ActionType resources
    are all Active, and with an id no other namespace uses. The rest are counted
    inactive, invalid (left out when read) or duplicate."""
    statuses: dict[str, set[str]] = {}
    problems = set()
    for action_type in action_types:
        if action_type.name:
            statuses.setdefault(action_type.name, set()).add(action_type.status)
        if action_type.problem:
            problems.add(
                f"ActionType {action_type.namespace}/{action_type.resource} left out:"
                f" {action_type.problem}"
            )
    names = Counter(w.name for w in workflows if w.workflow is not None)
    found: list[WorkflowResource] = []
    counts: Counter[str] = Counter()
    for resource in workflows:
        where = f"RemediationWorkflow {resource.namespace}/{resource.name}"
        if resource.workflow is None:
            counts["invalid"] += 1
            problems.add(f"{where} left out: {resource.problem}")
        elif resource.status != ACTIVE or statuses.get(resource.action_type) != {ACTIVE}:
            counts["inactive"] += 1
        elif names[resource.name] > 1:
            counts["duplicate"] += 1
            problems.add(f"{where} left out: its id is used in another namespace too")
        else:
            counts["offered"] += 1
            found.append(resource)
    return Offer(found, counts, frozenset(problems))


def catalog_view(resources: Sequence[WorkflowResource]) -> EmbeddedCatalog:
    """An immutable catalog of the offered workflows: searched on their search view,
    filtered on every value of their labels."""
    shown = {r.name: r.workflow for r in resources if r.workflow is not None}
    labels = {r.name: r.labels for r in resources}
    index = SearchIndex(
        [r.indexed for r in resources if r.indexed is not None],
        admit=lambda workflow, filters: labels[workflow.workflow_id].admit(filters),
        shown=shown,
    )
    return EmbeddedCatalog(list(shown.values()), index)


class KubernetesCatalog:
    """The `WorkflowCatalog` port over the cluster's resources (docs/internals.md).

    `connect` makes the reader (loading credentials; ValueError when they
    cannot be used). `start` is called by `wait_synced` and by the first
    read, so a server built with this catalog starts it as it comes up.
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[ApiServerReader]],
        namespace: str = "",
        *,
        limits: InformerLimits = InformerLimits(),
        rebuild_delay: float = 0.1,
    ) -> None:
        self._connect = connect
        self._namespace = namespace
        self._limits = limits
        self._rebuild_delay = rebuild_delay
        self._reader: ApiServerReader | None = None
        self._workflows: Informer[WorkflowResource] | None = None
        self._action_types: Informer[ActionTypeResource] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._starting: asyncio.Task[None] | None = None
        self._view: EmbeddedCatalog | None = None
        self._built = asyncio.Event()
        self._pending: asyncio.TimerHandle | None = None
        self._closed = False
        self._reported: frozenset[str] = frozenset()

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and begin list + watch (idempotent); raises ValueError when the
        credentials cannot be used."""
        await asyncio.shield(self._begin())

    def _begin(self) -> asyncio.Task[None]:
        if self._starting is None:
            # A fresh context: a caller's deadline is not the informers'.
            self._starting = asyncio.create_task(self._start(), context=contextvars.Context())
            self._starting.add_done_callback(_log_failed_start)
        return self._starting

    async def _start(self) -> None:
        self._reader = await self._connect()
        reader, namespace = self._reader, self._namespace or None

        def informer_of(
            rtype: ResourceType, read: Callable[[dict[str, Any]], Any]
        ) -> Informer[Any]:
            return Informer(
                reader,
                rtype,
                namespace,
                read,
                limits=self._limits,
                on_change=self._changed,
                on_state=self._state,
                on_relist=lambda reason: self._relisted(rtype.plural, reason),
            )

        self._workflows = informer_of(WORKFLOWS, read_workflow)
        self._action_types = informer_of(ACTION_TYPES, read_action_type)
        for informer in (self._workflows, self._action_types):
            self._tasks.append(asyncio.create_task(self._run(informer)))
        log.info(
            "kubernetes catalog: reading RemediationWorkflow and ActionType resources",
            extra={"namespace": self._namespace or "(all)", "source": self._reader.url},
        )

    async def _run(self, informer: Informer[Any]) -> None:
        try:
            await informer.run()
        except asyncio.CancelledError:
            raise
        except Exception:  # a defect: logged, and this copy stops changing
            log.exception("kubernetes catalog: the %s informer stopped", informer.name)

    async def wait_synced(self) -> None:
        """Return once both kinds were listed and a catalog was built."""
        await self.start()
        await self._built.wait()

    @property
    def synced(self) -> bool:
        return self._view is not None

    async def close(self) -> None:
        self._closed = True
        if self._pending is not None:
            self._pending.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._reader is not None:
            await self._reader.close()

    # -- the port -------------------------------------------------------------------

    async def search(self, query: SearchQuery) -> SearchResult:
        return await self._current().search(query)

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        return await self._current().get_schema(workflow_id)

    async def get_workflow(self, workflow_id: str) -> Workflow:
        return await self._current().get_workflow(workflow_id)

    def _current(self) -> EmbeddedCatalog:
        view = self._view
        if view is not None:
            return view
        if not self._closed:
            self._begin()
        errors = [i.last_error for i in (self._workflows, self._action_types) if i and i.last_error]
        raise CatalogUnavailableError(
            "the workflow catalog has not been read from the cluster yet"
            + (f" ({errors[0][:200]})" if errors else "")
        )

    # -- changes --------------------------------------------------------------------

    def _changed(self) -> None:
        if self._pending is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._pending = loop.call_later(self._rebuild_delay, self._rebuild)

    def _rebuild(self) -> None:
        self._pending = None
        workflows, action_types = self._workflows, self._action_types
        if workflows is None or action_types is None:
            return
        if not (workflows.synced.is_set() and action_types.synced.is_set()):
            return
        offer = offered(list(workflows.objects.values()), list(action_types.objects.values()))
        for problem in sorted(offer.problems - self._reported):
            log.warning("kubernetes catalog: %s", problem)  # once per problem
        self._reported = offer.problems
        self._view = catalog_view(offer.workflows)
        self._built.set()
        for state in ("offered", "inactive", "invalid", "duplicate"):
            metrics.KUBE_CATALOG_WORKFLOWS.labels(state).set(offer.counts[state])
        log.info("kubernetes catalog rebuilt", extra=dict(offer.counts))

    def _state(self) -> None:
        for informer in (self._workflows, self._action_types):
            if informer is not None:
                metrics.KUBE_CATALOG_CONNECTED.labels(informer.name).set(int(informer.connected))

    @staticmethod
    def _relisted(resource: str, reason: str) -> None:
        metrics.KUBE_CATALOG_LISTS.labels(resource, reason).inc()


def _log_failed_start(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("kubernetes catalog: cannot start: %s", task.exception())


def connecting(environ: Mapping[str, str]) -> Callable[[], Awaitable[ApiServerReader]]:
    """How the catalog connects with the credentials the Kubernetes toolset uses
    (in-cluster service account, else KUBECONFIG of `environ`): ValueError, naming
    HAPI_CATALOG_SOURCE, when they cannot be used."""

    async def connect() -> ApiServerReader:
        from hapi_grpc.adapters.kubernetes.credentials import load_connection

        try:
            connection = await load_connection(dict(environ))
        except Exception as exc:
            raise ValueError(
                f"HAPI_CATALOG_SOURCE=kubernetes: the credentials cannot be used: {exc}"
            ) from exc
        if connection is None:
            raise ValueError("HAPI_CATALOG_SOURCE=kubernetes: no credentials found")
        return ApiServerReader(connection, max_connections=4)

    return connect
