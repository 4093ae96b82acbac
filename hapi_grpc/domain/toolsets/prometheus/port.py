"""The ports the `prometheus` and `alertmanager` toolsets read through, and their failures.

The domain never sees HTTP: `hapi_grpc.adapters.metrics` implements these
protocols over the Prometheus HTTP API (Prometheus, Thanos, Mimir,
VictoriaMetrics) and Alertmanager's API v2. Answers are already summaries
(JSON objects for the model): raw matrices never cross the port.

Failures: `MetricsQueryFailure` (the server, or our bounds, rejected this
request: the message says how to fix it) and `MetricsSourceUnavailable`
(the source cannot answer now). `BudgetExhaustedError` (the investigation's
own deadline) is neither and propagates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from hapi_grpc.domain.errors import HapiError

__all__ = ["AlertsReader", "MetricsQueryFailure", "MetricsReader", "MetricsSourceUnavailable"]


class MetricsQueryFailure(HapiError):
    """A request the source (or our own bounds) rejected; a different one may work."""


class MetricsSourceUnavailable(HapiError):
    """The source cannot answer now: connection, timeout, 5xx, credentials, bad body."""


class MetricsReader(Protocol):
    """Read-only queries against one Prometheus-compatible endpoint."""

    async def instant(
        self, promql: str, *, at: float | None, timeout: float, max_series: int
    ) -> dict[str, Any]:
        """Summary of an instant query at `at` (unix seconds; None: the server's now)."""
        ...

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
        """Per-series summary (min/max/mean/last/trend) of a range query."""
        ...

    async def label_values(
        self, label: str, *, match: Sequence[str], timeout: float
    ) -> dict[str, Any]:
        """The values of one label (`__name__`: metric names), bounded, the rest counted."""
        ...

    async def series(self, match: Sequence[str], *, timeout: float) -> dict[str, Any]:
        """Label sets of the series matching the selectors, bounded, the rest counted."""
        ...


class AlertsReader(Protocol):
    """Read-only view of the alerts firing now."""

    async def active_alerts(
        self, labels: Mapping[str, str], *, namespace: str | None, timeout: float
    ) -> dict[str, Any]:
        """Summary of the active, unsilenced alerts matching every label given."""
        ...
