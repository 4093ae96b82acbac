"""Plain-value settings for the metrics and alerts clients, and the clients they make.

Constructed from the environment by the application's settings:
`HAPI_PROMETHEUS_URL`, `HAPI_PROMETHEUS_TOKEN_FILE`, `HAPI_PROMETHEUS_CA_FILE`,
`HAPI_PROMETHEUS_HEADERS` (a JSON object or `Name=value,Name2=value2`),
`HAPI_ALERTMANAGER_URL`. Alertmanager is reached with the same token file,
CA bundle and headers: deployments put both behind the same gateway or
tenant (Mimir serves both under one `X-Scope-OrgID`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hapi_grpc.adapters.metrics.alertmanager import AlertmanagerClient
from hapi_grpc.adapters.metrics.http import HttpSourceSettings, parse_headers
from hapi_grpc.adapters.metrics.prometheus import PrometheusClient, PrometheusLimits

__all__ = ["MetricsSettings"]


@dataclass(frozen=True)
class MetricsSettings:
    prometheus_url: str | None = None
    prometheus_token_file: str | None = None
    prometheus_ca_file: str | None = None
    prometheus_headers: str = ""
    alertmanager_url: str | None = None
    request_timeout_seconds: float = 10.0

    def _source(self, url: str) -> HttpSourceSettings:
        return HttpSourceSettings(
            url,
            token_file=self.prometheus_token_file or None,
            ca_file=self.prometheus_ca_file or None,
            headers=parse_headers(self.prometheus_headers),
            request_timeout=self.request_timeout_seconds,
        )

    def prometheus_client(self, limits: PrometheusLimits | None = None) -> PrometheusClient | None:
        """A client when `prometheus_url` is set; None means "no Prometheus toolset"."""
        if not self.prometheus_url:
            return None
        return PrometheusClient(self._source(self.prometheus_url), limits)

    def alertmanager_client(self) -> AlertmanagerClient | None:
        """A client when `alertmanager_url` is set."""
        if not self.alertmanager_url:
            return None
        return AlertmanagerClient(self._source(self.alertmanager_url))
