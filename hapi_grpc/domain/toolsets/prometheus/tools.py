"""The `prometheus` toolset: metrics of the incident, read through the `MetricsReader` port.

Four tools: an instant query, a range query (summarised per series: labels,
min/max/mean/last and trend; never the raw matrix), and two lookups so the
model can discover metric and label names before guessing them. Offered only
when `HAPI_PROMETHEUS_URL` is set.

A PromQL mistake or a request outside the bounds comes back as an
INVALID_ARGUMENTS answer carrying the server's message, so the model can fix
its query; an unreachable source is an ERROR answer saying the toolset is
unavailable. Neither fails the investigation. Every answer is wrapped under
`DATA_KEY`: data read from the metrics source, never instructions.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from pydantic import field_validator

from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets import arguments_gen as proto
from hapi_grpc.domain.toolsets.failure_answers import FailureAnswers, refused, unavailable
from hapi_grpc.domain.toolsets.prometheus.port import (
    MetricsQueryFailure,
    MetricsReader,
    MetricsSourceUnavailable,
)
from hapi_grpc.domain.toolsets.prometheus.query_time import (
    parse_duration,
    parse_time,
)
from hapi_grpc.domain.toolsets.prometheus.spec import DATA_KEY, NAME, PROMPT_NOTE
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits

__all__ = [
    "DATA_KEY",
    "LABEL_VALUES_TOOL",
    "NAME",
    "QUERY_TOOL",
    "RANGE_TOOL",
    "SERIES_TOOL",
    "PrometheusLabelValuesArgs",
    "PrometheusQueryArgs",
    "PrometheusRangeQueryArgs",
    "PrometheusSeriesArgs",
    "PrometheusToolsetSource",
    "metrics_answer",
    "metrics_failures",
    "parse_duration",
    "parse_time",
]

QUERY_TOOL = "prometheus_query"
RANGE_TOOL = "prometheus_query_range"
LABEL_VALUES_TOOL = "prometheus_label_values"
SERIES_TOOL = "prometheus_series"
DEFAULT_MAX_SERIES = 10
# A range query without a step gets about this many points per series.
_DEFAULT_POINTS = 120


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


def metrics_answer(data: dict[str, Any]) -> ToolResult:
    return ToolResult(ToolCallStatus.SUCCESS, {DATA_KEY: data})


def metrics_failures(source: str) -> FailureAnswers:
    """Decorates a metrics tool's `run`: query failures as fixable requests, outages as
    "unavailable"."""

    def answer(exc: MetricsQueryFailure | MetricsSourceUnavailable) -> ToolResult:
        if isinstance(exc, MetricsQueryFailure):
            return refused(exc.message, hint="fix the request and call again")
        return unavailable(f"the {source} toolset is", exc.message)

    return FailureAnswers((MetricsQueryFailure, MetricsSourceUnavailable), answer)


_guarded = metrics_failures(NAME)


@dataclass(frozen=True)
class PrometheusQuery:
    reader: MetricsReader
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
        summary = await self.reader.instant(
            args.query, at=at, timeout=ctx.timeout, max_series=self.max_series
        )
        if ctx.observed is not None:
            ctx.observed.record_metric(args.query, summary)
        return metrics_answer({"query": args.query, **summary})


@dataclass(frozen=True)
class PrometheusRangeQuery:
    reader: MetricsReader
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
        summary = await self.reader.range(
            args.query,
            start=end - span,
            end=end,
            step=step,
            timeout=ctx.timeout,
            max_series=self.max_series,
        )
        if ctx.observed is not None:
            ctx.observed.record_metric(args.query, summary)
        return metrics_answer({"query": args.query, "range": args.range, **summary})


@dataclass(frozen=True)
class PrometheusLabelValues:
    reader: MetricsReader
    name: str = LABEL_VALUES_TOOL
    description: str = (
        "List the values of one label; label __name__ lists metric names. Narrow with series"
        ' selectors such as {namespace="payments"}.'
    )
    arguments: type[PrometheusLabelValuesArgs] = PrometheusLabelValuesArgs

    @_guarded
    async def run(self, args: PrometheusLabelValuesArgs, ctx: ToolContext) -> ToolResult:
        found = await self.reader.label_values(args.label, match=args.match, timeout=ctx.timeout)
        return metrics_answer(found)


@dataclass(frozen=True)
class PrometheusSeries:
    reader: MetricsReader
    name: str = SERIES_TOOL
    description: str = "List the label sets of the series matching one or more selectors."
    arguments: type[PrometheusSeriesArgs] = PrometheusSeriesArgs

    @_guarded
    async def run(self, args: PrometheusSeriesArgs, ctx: ToolContext) -> ToolResult:
        return metrics_answer(await self.reader.series(args.match, timeout=ctx.timeout))


@dataclass(frozen=True)
class PrometheusToolsetSource:
    """Makes each investigation's `prometheus` toolset (the tools hold no state)."""

    reader: MetricsReader
    limits: ToolsetLimits
    max_series: int = DEFAULT_MAX_SERIES

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        reader = recorder.reading(self.reader)
        return Toolset(
            NAME,
            (
                PrometheusQuery(reader, self.max_series),
                PrometheusRangeQuery(reader, self.max_series),
                PrometheusLabelValues(reader),
                PrometheusSeries(reader),
            ),
            self.limits,
            prompt_note=PROMPT_NOTE,
        )
