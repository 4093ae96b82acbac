"""The `prometheus` toolset's spec: queries of a Prometheus-compatible API."""

from __future__ import annotations

from hapi_grpc.domain.toolsets.limits import ToolsetLimits
from hapi_grpc.domain.toolsets.prometheus.settings import PrometheusSettings
from hapi_grpc.domain.toolsets.spec import ToolsetSpec

__all__ = ["DATA_KEY", "NAME", "PROMPT_NOTE", "SPEC"]

NAME = "prometheus"
DATA_KEY = "metrics_data"
PROMPT_NOTE = (
    "Prometheus metrics tools (prometheus_query, prometheus_query_range; discover names with"
    " prometheus_label_values and prometheus_series)"
)


def _limits(settings: PrometheusSettings) -> ToolsetLimits:
    return ToolsetLimits(
        max_calls=settings.prometheus_max_calls,
        call_timeout=settings.prometheus_timeout_seconds,
    )


def _files(settings: PrometheusSettings) -> tuple[str, ...]:
    return ("prometheus_token_file", "prometheus_ca_file") if settings.prometheus_url else ()


SPEC = ToolsetSpec(
    name=NAME,
    prompt_note=PROMPT_NOTE,
    settings=PrometheusSettings,
    enabled_by="prometheus_url",
    opener="hapi_grpc.adapters.metrics.toolsets:open_prometheus",
    limits=_limits,
    readable_files=_files,
    untrusted_data=True,
    data_key=DATA_KEY,
)
