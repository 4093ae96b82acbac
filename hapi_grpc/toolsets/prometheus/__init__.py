"""The `prometheus` toolset: queries of a Prometheus-compatible HTTP API (Prometheus,
Thanos, Mimir, VictoriaMetrics). Its settings and what the service knows of it;
the client (`client`, `source`), the tools (`tools`, `summary`) and
the facts it records (`facts`) are imported when it is opened.

The token file, CA bundle and headers are also the `alertmanager` toolset's:
deployments put both behind the same gateway or tenant (Mimir serves both under
one `X-Scope-OrgID`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import BaseModel, Field, field_validator

from hapi_grpc.domain.sensitive import clip
from hapi_grpc.domain.toolsets.settings import check_url
from hapi_grpc.domain.toolsets.toolset import ToolsetLimits
from hapi_grpc.toolsets.base import OpenContext, Opened, ToolsetPlugin

__all__ = [
    "LABEL_VALUES_TOOL",
    "QUERY_TOOL",
    "RANGE_TOOL",
    "SERIES_TOOL",
    "PrometheusSettings",
    "PrometheusToolset",
    "parse_headers",
]

# Its tools' names (the built-in analyst reads their answers by name).
QUERY_TOOL = "prometheus_query"
RANGE_TOOL = "prometheus_query_range"
LABEL_VALUES_TOOL = "prometheus_label_values"
SERIES_TOOL = "prometheus_series"


class PrometheusSettings(BaseModel):
    """Queries of a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir,
    VictoriaMetrics), with a path prefix if any (Mimir: `https://mimir/prometheus`)."""

    prometheus_url: str | None = Field(
        None,
        description=(
            "Prometheus-compatible query API (path prefix kept); enables the `prometheus` toolset."
        ),
    )
    prometheus_token_file: str | None = Field(
        None,
        description="Bearer token file (Prometheus and Alertmanager), re-read when it changes.",
    )
    prometheus_ca_file: str | None = Field(None, description="CA bundle for https.")
    prometheus_headers: str = Field(
        "",
        description="Extra headers: `Name=value,...` or a JSON object (e.g. `X-Scope-OrgID`).",
    )
    prometheus_max_calls: int = Field(
        10, ge=0, le=100, description="Prometheus tool calls per investigation."
    )
    prometheus_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="Per call (the server's query timeout is set just below it).",
    )
    prometheus_max_series: int = Field(
        10, ge=1, le=100, description="Series shown per query answer; the rest are counted."
    )

    @field_validator("prometheus_url")
    @classmethod
    def _prometheus_url(cls, value: str | None) -> str | None:
        return check_url(value, ("http", "https"))

    @field_validator("prometheus_headers")
    @classmethod
    def _prometheus_headers(cls, value: str) -> str:
        try:
            parse_headers(value)
        except ValueError:
            # Not the parser's message: it quotes the text, which may hold a credential.
            raise ValueError(
                'must be a JSON object of strings ({"X-Scope-OrgID": "tenant-a"}) or'
                " Name=value pairs separated by commas"
            ) from None
        return value


def parse_headers(text: str) -> dict[str, str]:
    """Extra headers from a setting: a JSON object, or `Name=value` pairs separated by commas.

    `{"X-Scope-OrgID": "tenant-a"}` and `X-Scope-OrgID=tenant-a` are the same.
    """
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"headers: malformed JSON object ({exc.msg})") from None
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ValueError("headers: the JSON object must map header names to strings")
        return dict(value)
    headers: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"headers: expected Name=value, got {clip(part.strip(), 40)!r}")
        headers[name.strip()] = value.strip()
    return headers


class PrometheusToolset(ToolsetPlugin[PrometheusSettings]):
    """Metrics of the incident: an instant and a range query (summarised per series,
    never the raw matrix), and two lookups to discover metric and label names."""

    name = "prometheus"
    prompt_note = (
        "Prometheus metrics tools (prometheus_query, prometheus_query_range; discover names with"
        " prometheus_label_values and prometheus_series)"
    )
    settings_model = PrometheusSettings
    enabled_by = "prometheus_url"
    data_key = "metrics_data"
    typed_arguments = True

    @classmethod
    def argument_models(cls) -> Mapping[str, type[BaseModel]]:
        from hapi_grpc.toolsets.prometheus import tools

        return {
            QUERY_TOOL: tools.PrometheusQueryArgs,
            RANGE_TOOL: tools.PrometheusRangeQueryArgs,
            LABEL_VALUES_TOOL: tools.PrometheusLabelValuesArgs,
            SERIES_TOOL: tools.PrometheusSeriesArgs,
        }

    def limits(self) -> ToolsetLimits:
        return ToolsetLimits(
            max_calls=self.settings.prometheus_max_calls,
            call_timeout=self.settings.prometheus_timeout_seconds,
        )

    def readable_files(self) -> tuple[str, ...]:
        return ("prometheus_token_file", "prometheus_ca_file")

    async def open(self, context: OpenContext) -> Opened | None:
        """The toolset over a client of `HAPI_PROMETHEUS_URL`."""
        from hapi_grpc.toolsets.prometheus.client import PrometheusClient
        from hapi_grpc.toolsets.prometheus.tools import PrometheusToolsetSource

        client = PrometheusClient.of(self.settings)
        source = PrometheusToolsetSource(client, self.limits(), self.settings.prometheus_max_series)
        return Opened([source], client.close)
