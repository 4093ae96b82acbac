"""Openers of the `prometheus` and `alertmanager` toolsets (their specs name them).

Alertmanager is reached with the Prometheus settings' token file, CA bundle
and headers; both clients keep the longer of the two per-call timeouts as
their request timeout, and each toolset clips it to its own per call.
"""

from __future__ import annotations

from typing import cast

from hapi_grpc.adapters.metrics.readers import AlertmanagerReader, PrometheusReader
from hapi_grpc.adapters.metrics.settings import MetricsSettings
from hapi_grpc.domain.toolsets.alertmanager.settings import AlertmanagerSettings
from hapi_grpc.domain.toolsets.alertmanager.spec import SPEC as ALERTMANAGER
from hapi_grpc.domain.toolsets.alertmanager.tools import AlertmanagerToolsetSource
from hapi_grpc.domain.toolsets.prometheus.settings import PrometheusSettings
from hapi_grpc.domain.toolsets.prometheus.spec import SPEC as PROMETHEUS
from hapi_grpc.domain.toolsets.prometheus.tools import PrometheusToolsetSource
from hapi_grpc.domain.toolsets.spec import OpenContext, Opened

__all__ = ["open_alertmanager", "open_prometheus"]


def _metrics(context: OpenContext) -> MetricsSettings:
    prometheus = cast(PrometheusSettings, context.settings_of(PROMETHEUS.name))
    alertmanager = cast(AlertmanagerSettings, context.settings_of(ALERTMANAGER.name))
    return MetricsSettings(
        prometheus_url=prometheus.prometheus_url,
        prometheus_token_file=prometheus.prometheus_token_file,
        prometheus_ca_file=prometheus.prometheus_ca_file,
        prometheus_headers=prometheus.prometheus_headers,
        alertmanager_url=alertmanager.alertmanager_url,
        request_timeout_seconds=max(
            prometheus.prometheus_timeout_seconds, alertmanager.alertmanager_timeout_seconds
        ),
    )


async def open_prometheus(settings: PrometheusSettings, context: OpenContext) -> Opened | None:
    """The toolset when `HAPI_PROMETHEUS_URL` is set."""
    try:
        client = _metrics(context).prometheus_client()
    except ValueError as exc:
        raise ValueError(f"HAPI_PROMETHEUS_*: {exc}") from None
    if client is None:
        return None
    assert PROMETHEUS.limits is not None
    source = PrometheusToolsetSource(
        PrometheusReader(client), PROMETHEUS.limits(settings), settings.prometheus_max_series
    )
    return Opened([source], client.close)


async def open_alertmanager(settings: AlertmanagerSettings, context: OpenContext) -> Opened | None:
    """The toolset when `HAPI_ALERTMANAGER_URL` is set."""
    try:
        client = _metrics(context).alertmanager_client()
    except ValueError as exc:
        raise ValueError(f"HAPI_PROMETHEUS_*: {exc}") from None
    if client is None:
        return None
    assert ALERTMANAGER.limits is not None
    source = AlertmanagerToolsetSource(AlertmanagerReader(client), ALERTMANAGER.limits(settings))
    return Opened([source], client.close)
