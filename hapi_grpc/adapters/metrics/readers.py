"""The metrics clients behind the toolsets' ports (`domain.toolsets.prometheus.port`).

`PrometheusReader` answers with summaries (`summary.py`), never raw series;
lookups with the values or label sets kept by the client's cap and the total.
`AlertmanagerReader` passes the client's alert summary through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hapi_grpc.adapters.metrics.alertmanager import AlertmanagerClient
from hapi_grpc.adapters.metrics.prometheus import PrometheusClient
from hapi_grpc.adapters.metrics.summary import summarize_result

__all__ = ["AlertmanagerReader", "PrometheusReader"]


class PrometheusReader:
    """`MetricsReader` over a `PrometheusClient` (which it does not close)."""

    def __init__(self, client: PrometheusClient) -> None:
        self.client = client

    async def instant(
        self, promql: str, *, at: float | None, timeout: float, max_series: int
    ) -> dict[str, Any]:
        result = await self.client.query(promql, time=at, timeout=timeout)
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
    """`AlertsReader` over an `AlertmanagerClient` (which it does not close)."""

    def __init__(self, client: AlertmanagerClient) -> None:
        self.client = client

    async def active_alerts(
        self, labels: Mapping[str, str], *, namespace: str | None, timeout: float
    ) -> dict[str, Any]:
        return await self.client.active_alerts(labels, namespace=namespace, timeout=timeout)
