"""Settings of the `prometheus` toolset (`HAPI_PROMETHEUS_*`).

The token file, CA bundle and headers are also used for Alertmanager: deployments
put both behind the same gateway or tenant (Mimir serves both under one
`X-Scope-OrgID`).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field, field_validator

from hapi_grpc.domain.sensitive import clip
from hapi_grpc.domain.toolsets.settings import check_url

__all__ = ["PrometheusSettings", "parse_headers"]


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
