"""Async client for the Prometheus HTTP query API.

Design notes: docs/internals.md (`toolsets/prometheus/client.py`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hapi_grpc.adapters.http.transport import Response, Transport
from hapi_grpc.domain.sensitive import clip, redact
from hapi_grpc.toolsets.prometheus import PrometheusSettings
from hapi_grpc.toolsets.prometheus.source import (
    MetricsQueryError,
    MetricsSource,
    MetricsUnavailableError,
    QueryRefusedError,
    json_body,
)

__all__ = ["PrometheusClient", "PrometheusLimits", "QueryResult", "Series", "format_duration"]

ResultType = Literal["matrix", "vector", "scalar", "string"]
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# Errors the server reports about the query itself: a different query may work.
_QUERY_ERROR_TYPES = frozenset({"bad_data", "execution", "timeout", "canceled", "not_acceptable"})
_MESSAGE_LIMIT = 500
_MAX_WARNINGS = 5


def format_duration(seconds: float) -> str:
    """A short human form (`1h30m`, `45s`, `250ms`) for messages."""
    if seconds < 1:
        return f"{max(round(seconds * 1000), 1)}ms"
    out, rest = [], round(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            out.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(out) or "0s"


@dataclass(frozen=True)
class PrometheusLimits:
    """Bounds applied before a request is sent and to what comes back."""

    max_range_seconds: float = 2 * 86400.0
    max_points: int = 1100  # per series of a range query
    min_step_seconds: float = 1.0
    max_query_length: int = 4000
    max_lookup_items: int = 200  # label values or series returned by a lookup

    def __post_init__(self) -> None:
        if self.max_range_seconds <= 0 or self.min_step_seconds <= 0:
            raise ValueError("max_range_seconds and min_step_seconds must be positive")
        if self.max_points < 2 or self.max_query_length < 1 or self.max_lookup_items < 1:
            raise ValueError("max_points must be >= 2, the other limits >= 1")


@dataclass(frozen=True)
class Series:
    """One time series: its labels and (timestamp, value) samples, oldest first."""

    labels: Mapping[str, str]
    samples: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class QueryResult:
    """A query answer; `series` for matrix/vector, `scalar` for scalar, `string` for string."""

    result_type: ResultType
    series: tuple[Series, ...] = ()
    scalar: tuple[float, float] | None = None
    string: tuple[float, str] | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelValues:
    values: tuple[str, ...]
    total: int  # before the cap


@dataclass(frozen=True)
class SeriesList:
    series: tuple[Mapping[str, str], ...]
    total: int  # before the cap


class PrometheusClient:
    """Query client for one Prometheus-compatible endpoint."""

    def __init__(self, source: MetricsSource, limits: PrometheusLimits | None = None) -> None:
        self.limits = limits or PrometheusLimits()
        self._source = source

    @classmethod
    def of(
        cls, settings: PrometheusSettings, *, transport: Transport | None = None
    ) -> PrometheusClient:
        """The client of `HAPI_PROMETHEUS_URL` (ValueError naming a malformed setting)."""
        if not settings.prometheus_url:
            raise ValueError("HAPI_PROMETHEUS_URL is not set")
        try:
            source = MetricsSource(
                "Prometheus",
                settings.prometheus_url,
                settings,
                settings.prometheus_timeout_seconds,
                transport=transport,
            )
        except ValueError as exc:
            raise ValueError(f"HAPI_PROMETHEUS_*: {exc}") from None
        return cls(source)

    async def close(self) -> None:
        await self._source.close()

    # -- queries --------------------------------------------------------------------

    async def query(
        self, promql: str, *, time: float | None = None, timeout: float | None = None
    ) -> QueryResult:
        """Instant query at `time` (unix seconds; the server's now when None).

        `timeout` (every method takes it) lowers `request_timeout` for this
        call; the caller's budget always does.
        """
        self._check_query(promql)
        params = [("query", promql)]
        if time is not None:
            params.append(("time", _ts(time)))
        return await self._query("/api/v1/query", params, timeout)

    async def query_range(
        self,
        promql: str,
        *,
        start: float,
        end: float,
        step: float,
        timeout: float | None = None,
    ) -> QueryResult:
        """Range query over [start, end] (unix seconds) every `step` seconds.

        Refused (QueryRefusedError) when the window is empty or longer than
        `max_range_seconds`, or when it would return more than `max_points`
        points per series; the message says which values would be accepted.
        """
        self._check_query(promql)
        lim = self.limits
        if not all(math.isfinite(x) for x in (start, end, step)):
            raise QueryRefusedError("start, end and step must be finite numbers")
        if end <= start:
            raise QueryRefusedError("end must be after start")
        span = end - start
        if span > lim.max_range_seconds:
            raise QueryRefusedError(
                f"the range of {format_duration(span)} is longer than the maximum of "
                f"{format_duration(lim.max_range_seconds)}; move start closer to end"
            )
        if step < lim.min_step_seconds:
            raise QueryRefusedError(
                f"step must be at least {format_duration(lim.min_step_seconds)}"
            )
        points = math.floor(span / step) + 1
        if points > lim.max_points:
            smallest = math.ceil(span / (lim.max_points - 1))
            raise QueryRefusedError(
                f"a step of {format_duration(step)} over {format_duration(span)} gives {points} "
                f"points per series, more than the maximum of {lim.max_points}; use a step of "
                f"at least {format_duration(smallest)} or a shorter range"
            )
        params = [("query", promql), ("start", _ts(start)), ("end", _ts(end)), ("step", _ts(step))]
        return await self._query("/api/v1/query_range", params, timeout)

    # -- lookups --------------------------------------------------------------------

    async def label_values(
        self, label: str, *, match: Sequence[str] = (), timeout: float | None = None
    ) -> LabelValues:
        """Values of `label` (`__name__` lists metric names), optionally under selectors."""
        if not _LABEL_NAME.match(label):
            raise QueryRefusedError(f"{clip(label, 60)!r} is not a label name")
        data = await self._data(f"/api/v1/label/{label}/values", self._matches(match), timeout)
        if not isinstance(data, list) or not all(isinstance(v, str) for v in data):
            raise self._contract("label values are not a list of strings")
        values = sorted(data)
        return LabelValues(tuple(values[: self.limits.max_lookup_items]), len(values))

    async def series(self, match: Sequence[str], *, timeout: float | None = None) -> SeriesList:
        """Label sets of the series matching any selector in `match` (at least one)."""
        if not match:
            raise QueryRefusedError('give at least one series selector, such as up{job="api"}')
        data = await self._data("/api/v1/series", self._matches(match), timeout)
        if not isinstance(data, list) or not all(_is_labels(item) for item in data):
            raise self._contract("series are not a list of label sets")
        ordered = sorted(data, key=lambda labels: sorted(labels.items()))
        return SeriesList(tuple(ordered[: self.limits.max_lookup_items]), len(data))

    # -- internals ------------------------------------------------------------------

    def _check_query(self, promql: str) -> None:
        if not promql.strip():
            raise QueryRefusedError("the query is empty")
        if len(promql) > self.limits.max_query_length:
            raise QueryRefusedError(
                f"the query is {len(promql)} characters long, more than the maximum of "
                f"{self.limits.max_query_length}"
            )

    def _matches(self, match: Sequence[str]) -> list[tuple[str, str]]:
        for selector in match:
            self._check_query(selector)
        return [("match[]", selector) for selector in match]

    async def _query(
        self, path: str, params: list[tuple[str, str]], cap: float | None
    ) -> QueryResult:
        timeout = self._source.http.timeout(cap)
        # The server stops a little before we do, so its own timeout error wins.
        server_timeout = max(timeout * 0.9 - 0.05, 0.001)
        params.append(("timeout", f"{max(int(server_timeout * 1000), 1)}ms"))
        resp = await self._source.get(path, params, timeout=timeout)
        body = self._success(resp)
        data = body.get("data")
        warnings = tuple(
            clip(redact(str(w)), 200) for w in (body.get("warnings") or [])[:_MAX_WARNINGS]
        )
        try:
            return _parse_result(data, warnings)
        except (TypeError, ValueError, KeyError, IndexError):
            raise self._contract("the query result does not have the documented shape") from None

    async def _data(self, path: str, params: list[tuple[str, str]], cap: float | None) -> Any:
        resp = await self._source.get(path, params, timeout=self._source.http.timeout(cap))
        return self._success(resp).get("data")

    def _success(self, resp: Response) -> dict[str, Any]:
        answer = json_body(resp)
        body = answer if isinstance(answer, dict) else None
        if 200 <= resp.status < 300 and body is not None and body.get("status") == "success":
            return body
        if resp.status in (401, 403):
            raise MetricsUnavailableError(
                f"Prometheus refused the credentials (HTTP {resp.status})"
            )
        if body is not None and body.get("status") == "error":
            error_type = str(body.get("errorType") or "")
            message = clip(redact(" ".join(str(body.get("error") or "").split())), _MESSAGE_LIMIT)
            if error_type in _QUERY_ERROR_TYPES or resp.status in (400, 422):
                hint = (
                    "; narrow the selector or shorten the range"
                    if error_type in ("timeout", "canceled")
                    else ""
                )
                raise MetricsQueryError(
                    f"Prometheus rejected the query ({error_type or resp.status}): {message}{hint}",
                    error_type or "bad_data",
                )
            raise MetricsUnavailableError(
                f"Prometheus answered HTTP {resp.status} ({error_type}): {message}"
            )
        if 200 <= resp.status < 300:
            raise self._contract("the body is not a Prometheus API answer")
        text = resp.snippet()
        detail = f": {text}" if text else ""
        raise MetricsUnavailableError(f"Prometheus answered HTTP {resp.status}{detail}")

    @staticmethod
    def _contract(problem: str) -> MetricsUnavailableError:
        return MetricsUnavailableError(f"Prometheus answered, but {problem}")


def _ts(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _is_labels(item: object) -> bool:
    return isinstance(item, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in item.items()
    )


def _sample(pair: Any) -> tuple[float, float]:
    t, v = pair
    return float(t), float(v)  # float() reads "NaN", "+Inf" and "-Inf"


def _parse_result(data: Any, warnings: tuple[str, ...]) -> QueryResult:
    result_type = data["resultType"]
    result = data["result"]
    if result_type == "matrix":
        series = tuple(
            Series(_labels(item["metric"]), tuple(_sample(p) for p in item["values"]))
            for item in result
        )
        return QueryResult("matrix", series, warnings=warnings)
    if result_type == "vector":
        series = tuple(
            Series(_labels(item["metric"]), (_sample(item["value"]),)) for item in result
        )
        return QueryResult("vector", series, warnings=warnings)
    if result_type == "scalar":
        return QueryResult("scalar", scalar=_sample(result), warnings=warnings)
    if result_type == "string":
        t, s = result
        return QueryResult("string", string=(float(t), str(s)), warnings=warnings)
    raise ValueError(f"unknown resultType {result_type!r}")


def _labels(metric: Any) -> dict[str, str]:
    if not _is_labels(metric):
        raise ValueError("labels are not a string map")
    return dict(metric)
