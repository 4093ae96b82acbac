"""The metrics clients behind the toolsets' ports (`domain.toolsets.prometheus.port`).

`PrometheusReader` answers with summaries (`summary.py`), never raw series;
lookups with the values or label sets kept by the client's cap and the total.
`AlertmanagerReader` passes the client's alert summary through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hapi_grpc.adapters.metrics.alertmanager import AlertmanagerClient
from hapi_grpc.adapters.metrics.prometheus import PrometheusClient, QueryResult
from hapi_grpc.adapters.metrics.summary import summarize_result

__all__ = ["AlertmanagerReader", "PrometheusReader"]


class PrometheusReader:
    """`MetricsReader` over a `PrometheusClient` (which it does not close);
    `on_result` sees each query's answer as the client received it (capture)."""

    def __init__(
        self, client: PrometheusClient, on_result: Callable[[QueryResult], None] | None = None
    ) -> None:
        self.client = client
        self.on_result = on_result

    async def instant(
        self, promql: str, *, at: float | None, timeout: float, max_series: int
    ) -> dict[str, Any]:
        result = await self.client.query(promql, time=at, timeout=timeout)
        if self.on_result is not None:
            self.on_result(result)
        return summarize_result(result, max_series=max_series)

    async def range(
        self,
        promql: str,
        *,
        start: float,
        end: float,
        step: float,
        timeout: float,
        max_series: int,
    ) -> dict[str, Any]:
        result = await self.client.query_range(
            promql, start=start, end=end, step=step, timeout=timeout
        )
        if self.on_result is not None:
            self.on_result(result)
        return summarize_result(result, max_series=max_series)

    async def label_values(
        self, label: str, *, match: Sequence[str], timeout: float
    ) -> dict[str, Any]:
        found = await self.client.label_values(label, match=match, timeout=timeout)
        out: dict[str, Any] = {"label": label, "values": list(found.values), "total": found.total}
        if found.total > len(found.values):
            out["values_not_shown"] = found.total - len(found.values)
        return out

    async def series(self, match: Sequence[str], *, timeout: float) -> dict[str, Any]:
        found = await self.client.series(match, timeout=timeout)
        out: dict[str, Any] = {
            "series": [dict(sorted(labels.items())) for labels in found.series],
            "total": found.total,
        }
        if found.total > len(found.series):
            out["series_not_shown"] = found.total - len(found.series)
        return out


class AlertmanagerReader:
    """`AlertsReader` over an `AlertmanagerClient` (which it does not close);
    `on_alerts` sees the alerts as the client received them (capture)."""

    def __init__(
        self,
        client: AlertmanagerClient,
        on_alerts: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self.client = client
        self.on_alerts = on_alerts

    async def active_alerts(
        self, labels: Mapping[str, str], *, namespace: str | None, timeout: float
    ) -> dict[str, Any]:
        return await self.client.active_alerts(
            labels, namespace=namespace, timeout=timeout, on_alerts=self.on_alerts
        )
