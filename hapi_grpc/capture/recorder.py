"""`CaseRecorder`: what one investigation's ports answered, kept for its case.

The recorder is the investigation's `ReadRecorder`: each client a toolset (or
the engine) opens is handed back wrapped, keeping what it answered before any
view of it (Prometheus' samples, not their summary; Alertmanager's alerts, seen
through the client's `on_alerts` hook). Only what the caller could read is
kept: a port opened with the scope's `allows_namespace` keeps no list item, no
pod of a node's stats summary and no alert in a namespace it refuses (the
tools read wide and filter after reading). On the event loop it only keeps
references to what was answered; cleaning, redaction and serialization happen on
the capture's writer thread (`case_files`), so recording costs an append per read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader, ResourceType
from hapi_grpc.toolsets.alertmanager.client import AlertmanagerClient
from hapi_grpc.toolsets.prometheus.client import PrometheusClient

__all__ = ["CaseRecorder", "LogRead"]


@dataclass(frozen=True, slots=True)
class LogRead:
    namespace: str
    pod: str
    container: str
    previous: bool
    text: str


@dataclass
class CaseRecorder:
    """What one investigation read, as its ports answered it."""

    objects: list[tuple[ResourceType, dict[str, Any]]] = field(default_factory=list)
    logs: list[LogRead] = field(default_factory=list)
    node_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    series: list[Any] = field(default_factory=list)  # prometheus QueryResult answers
    alerts: list[dict[str, Any]] = field(default_factory=list)
    history: list[Any] = field(default_factory=list)  # HistoryContext answers
    workflow_ids: dict[str, None] = field(default_factory=dict)  # search hits, in order
    started: float = field(default_factory=time.time)

    def reading(self, port: Any, allows_namespace: Callable[[str], bool] | None = None) -> Any:
        """`port` recording into this recorder what lies in a namespace `allows_namespace`
        allows (everything without it); a port it does not know is handed back."""
        if isinstance(port, ApiServerReader):
            return _ClusterReads(port, self, allows_namespace)
        if isinstance(port, PrometheusClient):
            return _MetricsReads(port, self, allows_namespace)
        if isinstance(port, AlertmanagerClient):
            return _AlertReads(port, self, allows_namespace)
        if hasattr(port, "search") and hasattr(port, "get_workflow"):
            return _CatalogReads(port, self, allows_namespace)
        if hasattr(port, "context"):
            return _HistoryReads(port, self, allows_namespace)
        return port


class _Delegating:
    """Whatever the wrapped port offers besides the reads recorded."""

    def __init__(
        self, port: Any, recorder: CaseRecorder, allows: Callable[[str], bool] | None
    ) -> None:
        self._port = port
        self._recorder = recorder
        self._allows = allows

    def _allowed(self, namespace: Any) -> bool:
        """Whether what lies in `namespace` may be kept (no namespace: cluster-scoped)."""
        return self._allows is None or not namespace or self._allows(str(namespace))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._port, name)


class _ClusterReads(_Delegating):
    """The `KubernetesReader` port, keeping every object, log and stats summary answered."""

    async def get(
        self, rtype: ResourceType, namespace: str | None, name: str, timeout: float
    ) -> dict[str, Any]:
        obj = await self._port.get(rtype, namespace, name, timeout)
        self._recorder.objects.append((rtype, obj))
        return obj

    async def list(self, rtype: ResourceType, namespace: str | None, timeout: float, **kw: Any):  # type: ignore[no-untyped-def]
        found = await self._port.list(rtype, namespace, timeout, **kw)
        kept = self._recorder.objects
        for item in found.get("items") or []:
            if isinstance(item, dict) and self._allowed(
                (item.get("metadata") or {}).get("namespace")
            ):
                kept.append((rtype, item))
        return found

    async def pod_log(self, namespace: str, pod: str, container: str, timeout: float, **kw: Any):  # type: ignore[no-untyped-def]
        text = await self._port.pod_log(namespace, pod, container, timeout, **kw)
        previous = bool(kw.get("previous", False))
        self._recorder.logs.append(LogRead(namespace, pod, container, previous, text))
        return text

    async def node_stats(self, node: str, timeout: float) -> dict[str, Any]:
        summary = await self._port.node_stats(node, timeout)
        pods = summary.get("pods") if isinstance(summary, dict) else None
        if self._allows is not None and isinstance(pods, list):
            kept = [p for p in pods if isinstance(p, dict) and self._allowed(_pod_namespace(p))]
            self._recorder.node_stats[node] = {**summary, "pods": kept}
        else:
            self._recorder.node_stats[node] = summary
        return summary


def _pod_namespace(pod: dict[str, Any]) -> Any:
    ref = pod.get("podRef")
    return ref.get("namespace") if isinstance(ref, dict) else None


class _MetricsReads(_Delegating):
    """A Prometheus client, keeping every query's answer (its samples)."""

    async def query(self, promql: str, **kw: Any) -> Any:
        result = await self._port.query(promql, **kw)
        self._recorder.series.append(result)
        return result

    async def query_range(self, promql: str, **kw: Any) -> Any:
        result = await self._port.query_range(promql, **kw)
        self._recorder.series.append(result)
        return result


class _AlertReads(_Delegating):
    """An Alertmanager client, keeping the alerts it answered."""

    async def active_alerts(self, labels: Any = None, **kw: Any) -> Any:
        return await self._port.active_alerts(labels, on_alerts=self._keep, **kw)

    def _keep(self, alerts: list[dict[str, Any]]) -> None:
        self._recorder.alerts.extend(
            a
            for a in alerts
            if isinstance(a, dict) and self._allowed((a.get("labels") or {}).get("namespace"))
        )


class _HistoryReads(_Delegating):
    """A history port, keeping every target context it answered."""

    async def context(self, *args: Any, **kw: Any) -> Any:
        found = await self._port.context(*args, **kw)
        self._recorder.history.append(found)
        return found


class _CatalogReads(_Delegating):
    """The catalog, keeping the id of every workflow a search returned."""

    async def search(self, query: Any) -> Any:
        found = await self._port.search(query)
        for hit in found.workflows:
            self._recorder.workflow_ids[hit.workflow_id] = None
        return found
