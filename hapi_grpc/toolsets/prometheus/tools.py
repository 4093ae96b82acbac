"""The `prometheus` tools: metrics of the incident, read with the `PrometheusClient`.

Design notes: docs/internals.md (`toolsets/prometheus/tools.py`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import re2
from pydantic import field_validator

from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets import arguments_gen as proto
from hapi_grpc.domain.toolsets.tool import (
    FailureAnswers,
    ToolContext,
    ToolResult,
    refused,
    unavailable,
)
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.toolsets.prometheus import (
    LABEL_VALUES_TOOL,
    QUERY_TOOL,
    RANGE_TOOL,
    SERIES_TOOL,
    PrometheusToolset,
)
from hapi_grpc.toolsets.prometheus.client import PrometheusClient
from hapi_grpc.toolsets.prometheus.facts import record_metric
from hapi_grpc.toolsets.prometheus.source import MetricsQueryError, MetricsUnavailableError
from hapi_grpc.toolsets.prometheus.summary import DEFAULT_MAX_SERIES, summarize_result

__all__ = [
    "PrometheusLabelValuesArgs",
    "PrometheusQueryArgs",
    "PrometheusRangeQueryArgs",
    "PrometheusSeriesArgs",
    "PrometheusToolsetSource",
    "metrics_failures",
    "parse_duration",
]

# A range query without a step gets about this many points per series.
_DEFAULT_POINTS = 120
DURATION_HELP = "a duration such as 30s, 15m, 1h or 2d"
TIME_HELP = "now, now-30m, unix seconds or an RFC 3339 time (2026-01-01T10:00:00Z)"
UNIT_SECONDS: Mapping[str, float] = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 604800,
}
# RE2: backtracking took 0.6 s over 4,096 digits (each start re-read the run).
_MAX_DURATION_CHARS = 64  # "1h1h1h..." would sum a match per two characters
_DURATION = re2.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def duration_seconds(text: str) -> float | None:
    """Seconds of a duration such as `90s` or `1h30m`; None when it is not one."""
    if len(text) > _MAX_DURATION_CHARS or not text.isascii():
        return None  # digits and units are ASCII; RE2 reads nothing else here
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * UNIT_SECONDS[match.group(2)]
        pos = match.end()
    return total if text and pos == len(text) else None


def parse_duration(text: str) -> float:
    """Seconds of a Prometheus duration (`90s`, `1h30m`); ValueError otherwise."""
    total = duration_seconds(text.strip())
    if not total:
        raise ValueError(f"must be {DURATION_HELP}")
    return total


def parse_time(text: str, now: float) -> float:
    """Unix seconds of `now`, `now-<duration>`, unix seconds or an RFC 3339 time."""
    text = text.strip()
    if text == "now":
        return now
    if text.startswith("now-"):
        return now - parse_duration(text[4:])
    try:
        value: float | None = float(text)
    except ValueError:
        value = None
    if value is not None:
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"must be {TIME_HELP}")
        return value
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"must be {TIME_HELP}") from None
    if parsed.tzinfo is None:
        raise ValueError("an RFC 3339 time needs a zone (Z or +00:00)")
    return parsed.timestamp()


def _check_time(value: str | None) -> str | None:
    if value is not None:
        parse_time(value, 0.0)
    return value


class PrometheusQueryArgs(proto.PrometheusQueryArgs):
    """`hapi.v1.PrometheusQueryArgs`, and the time must parse."""

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        return _check_time(value)


class PrometheusRangeQueryArgs(proto.PrometheusRangeQueryArgs):
    """`hapi.v1.PrometheusRangeQueryArgs`, and the end and durations must parse."""

    @field_validator("end")
    @classmethod
    def _end(cls, value: str | None) -> str | None:
        return _check_time(value)

    @field_validator("range", "step")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value


# The generated models as they are: tools.proto says all they check.
PrometheusLabelValuesArgs = proto.PrometheusLabelValuesArgs
PrometheusSeriesArgs = proto.PrometheusSeriesArgs


def metrics_answer(data: dict[str, Any], key: str = PrometheusToolset.data_key) -> ToolResult:
    return ToolResult(ToolCallStatus.SUCCESS, {key: data})


def metrics_failures(source: str) -> FailureAnswers:
    """Decorates a metrics tool's `run`: query failures as fixable requests, outages as
    "unavailable"."""

    def answer(exc: MetricsQueryError | MetricsUnavailableError) -> ToolResult:
        if isinstance(exc, MetricsQueryError):
            return refused(exc.message, hint="fix the request and call again")
        return unavailable(f"the {source} toolset is", exc.message)

    return FailureAnswers((MetricsQueryError, MetricsUnavailableError), answer)


_guarded = metrics_failures(PrometheusToolset.name)


@dataclass(frozen=True)
class PrometheusQuery:
    client: PrometheusClient
    max_series: int = DEFAULT_MAX_SERIES
    name: str = QUERY_TOOL
    description: str = (
        "Evaluate a PromQL expression at one instant (default now): each series with its labels"
        " and value, largest first. Use rate()/increase() for counters."
    )
    arguments: type[PrometheusQueryArgs] = PrometheusQueryArgs

    @_guarded
    async def run(self, args: PrometheusQueryArgs, ctx: ToolContext) -> ToolResult:
        at = parse_time(args.time, time.time()) if args.time else None
        result = await self.client.query(args.query, time=at, timeout=ctx.timeout)
        summary = summarize_result(result, max_series=self.max_series)
        if ctx.observed is not None:
            record_metric(ctx.observed, args.query, summary)
        return metrics_answer({"query": args.query, **summary})


@dataclass(frozen=True)
class PrometheusRangeQuery:
    client: PrometheusClient
    max_series: int = DEFAULT_MAX_SERIES
    name: str = RANGE_TOOL
    description: str = (
        "Evaluate a PromQL expression over a window (default the last hour): per series its"
        " labels, min, max, mean, last value and trend (rising/falling/flat, slope per minute)."
    )
    arguments: type[PrometheusRangeQueryArgs] = PrometheusRangeQueryArgs

    @_guarded
    async def run(self, args: PrometheusRangeQueryArgs, ctx: ToolContext) -> ToolResult:
        end = parse_time(args.end, time.time()) if args.end else time.time()
        span = parse_duration(args.range)
        step = (
            parse_duration(args.step) if args.step else max(1.0, math.ceil(span / _DEFAULT_POINTS))
        )
        result = await self.client.query_range(
            args.query, start=end - span, end=end, step=step, timeout=ctx.timeout
        )
        summary = summarize_result(result, max_series=self.max_series)
        if ctx.observed is not None:
            record_metric(ctx.observed, args.query, summary)
        return metrics_answer({"query": args.query, "range": args.range, **summary})


@dataclass(frozen=True)
class PrometheusLabelValues:
    client: PrometheusClient
    name: str = LABEL_VALUES_TOOL
    description: str = (
        "List the values of one label; label __name__ lists metric names. Narrow with series"
        ' selectors such as {namespace="payments"}.'
    )
    arguments: type[PrometheusLabelValuesArgs] = PrometheusLabelValuesArgs

    @_guarded
    async def run(self, args: PrometheusLabelValuesArgs, ctx: ToolContext) -> ToolResult:
        found = await self.client.label_values(args.label, match=args.match, timeout=ctx.timeout)
        out: dict[str, Any] = {"label": args.label, "values": list(found.values)}
        out["total"] = found.total
        if found.total > len(found.values):
            out["values_not_shown"] = found.total - len(found.values)
        return metrics_answer(out)


@dataclass(frozen=True)
class PrometheusSeries:
    client: PrometheusClient
    name: str = SERIES_TOOL
    description: str = "List the label sets of the series matching one or more selectors."
    arguments: type[PrometheusSeriesArgs] = PrometheusSeriesArgs

    @_guarded
    async def run(self, args: PrometheusSeriesArgs, ctx: ToolContext) -> ToolResult:
        found = await self.client.series(args.match, timeout=ctx.timeout)
        out: dict[str, Any] = {
            "series": [dict(sorted(labels.items())) for labels in found.series],
            "total": found.total,
        }
        if found.total > len(found.series):
            out["series_not_shown"] = found.total - len(found.series)
        return metrics_answer(out)


@dataclass(frozen=True)
class PrometheusToolsetSource:
    """Makes each investigation's `prometheus` toolset (the tools hold no state)."""

    client: PrometheusClient
    limits: ToolsetLimits
    max_series: int = DEFAULT_MAX_SERIES

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        client = recorder.reading(self.client)
        return PrometheusToolset.toolset(
            (
                PrometheusQuery(client, self.max_series),
                PrometheusRangeQuery(client, self.max_series),
                PrometheusLabelValues(client),
                PrometheusSeries(client),
            ),
            self.limits,
        )
