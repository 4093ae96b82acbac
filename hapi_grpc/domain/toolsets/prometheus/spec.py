"""The `prometheus` toolset's spec: queries of a Prometheus-compatible API."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

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


def _argument_models() -> Mapping[str, type[BaseModel]]:
    from hapi_grpc.domain.toolsets.prometheus.tools import (
        LABEL_VALUES_TOOL,
        QUERY_TOOL,
        RANGE_TOOL,
        SERIES_TOOL,
        PrometheusLabelValuesArgs,
        PrometheusQueryArgs,
        PrometheusRangeQueryArgs,
        PrometheusSeriesArgs,
    )

    return {
        QUERY_TOOL: PrometheusQueryArgs,
        RANGE_TOOL: PrometheusRangeQueryArgs,
        LABEL_VALUES_TOOL: PrometheusLabelValuesArgs,
        SERIES_TOOL: PrometheusSeriesArgs,
    }


SPEC = ToolsetSpec(
    name=NAME,
    prompt_note=PROMPT_NOTE,
    argument_models=_argument_models,
    typed_arguments=True,
    settings=PrometheusSettings,
    enabled_by="prometheus_url",
    opener="hapi_grpc.adapters.metrics.toolsets:open_prometheus",
    limits=_limits,
    readable_files=_files,
    untrusted_data=True,
    data_key=DATA_KEY,
)
