"""How the `prometheus` tools fill the observed record: each query's series, typed.

Design notes: docs/internals.md (`toolsets/prometheus/facts.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import re2

from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.observed.facts import MetricFacts, SeriesFacts, SeriesSubject

__all__ = ["query_metrics", "record_metric", "series_subject"]

_QUERY = 300
_SERIES = 20

# Identifiers of a PromQL expression, once label matchers, strings, ranges and
# grouping clauses (label names) are removed.
_MATCHERS = re2.compile(
    r'\{[^}]*\}|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\[[^\]]*\]'
    r"|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"
)
_IDENT = re2.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
# Words of PromQL that are not metric names: functions, aggregations, keywords.
_PROMQL_WORDS = frozenset(
    """abs absent absent_over_time and avg avg_over_time bool bottomk by ceil changes
    clamp clamp_max clamp_min count count_over_time count_values day_of_month day_of_week
    day_of_year days_in_month delta deriv exp floor group group_left group_right
    histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev
    histogram_stdvar histogram_sum holt_winters hour idelta ignoring increase irate
    label_join label_replace last_over_time limitk limit_ratio ln log10 log2 mad_over_time
    max max_over_time min min_over_time minute month offset on or predict_linear
    present_over_time quantile quantile_over_time rate resets round scalar sgn sort
    sort_by_label sort_by_label_desc sort_desc sqrt stddev stddev_over_time stdvar
    stdvar_over_time sum sum_over_time time timestamp topk unless vector without year
    double_exponential_smoothing inf nan""".split()
)
# Functions whose result is a rate or a change, not the counter's running total.
_RATES = re2.compile(r"\b(rate|irate|increase|delta|idelta|deriv|resets|changes)\s*\(")
_COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket", "_created")
# Metric names that measure memory or CPU: cAdvisor's container_memory_*, runtime
# heaps and resident sets (process_resident_memory_bytes, go_memstats_heap_*,
# jvm_memory_*), and CPU seconds and throttling.
_MEMORY = re2.compile(r"memory|working_set|rss|heap|resident|malloc|_mem_|memstats")
_CPU = re2.compile(r"cpu")


def query_metrics(query: str) -> tuple[str, ...]:
    """The metric names a PromQL query reads, in order, without repeats."""
    bare = _MATCHERS.sub(" ", query[:4000])
    names: list[str] = []
    for word in _IDENT.findall(bare):
        if word.lower() not in _PROMQL_WORDS and not word[0].isdigit() and word not in names:
            names.append(word)
    return tuple(names[:10])


def record_metric(observed: Observed, query: str, summary: dict[str, Any]) -> None:
    """A query's summary (`summary.summarize_result`), per series."""
    series: list[SeriesFacts] = []
    names = query_metrics(query)
    for s in (summary.get("series") or [])[:_SERIES]:
        if not isinstance(s, dict):
            continue
        trend = found if isinstance(found := s.get("trend"), dict) else {}
        labels = {str(k): str(v) for k, v in (s.get("labels") or {}).items()}
        series.append(
            SeriesFacts(
                labels=labels,
                min=_number(s.get("min")),
                max=_number(s.get("max")),
                last=_number(s.get("last", s.get("value"))),
                trend=str(trend.get("direction", "")),
                slope_per_minute=_number(trend.get("slope_per_minute")),
                **series_subject(query, names, labels),
            )
        )
    observed.add_metric(MetricFacts(query=query[:_QUERY], series=series))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def series_subject(query: str, names: tuple[str, ...], labels: Mapping[str, str]) -> SeriesSubject:
    """`metric`, `resource`, `counter`, `namespace`, `pod`, `container` of a series."""
    own = labels.get("__name__", "")
    metric = own or (names[0] if names else "")
    measured = [own] if own else list(names)
    if any(_MEMORY.search(n) for n in measured):
        resource = "memory"
    elif any(_CPU.search(n) for n in measured):
        resource = "cpu"
    else:
        resource = ""
    raw = bool(measured) and all(n.endswith(_COUNTER_SUFFIXES) for n in measured)
    counter = raw and (bool(own) or not _RATES.search(query))
    container = labels.get("container") or labels.get("container_name") or ""
    return {
        "metric": metric,
        "resource": resource,
        "counter": counter,
        "namespace": labels.get("namespace") or labels.get("exported_namespace") or "",
        "pod": labels.get("pod") or labels.get("pod_name") or "",
        # cAdvisor's pause container ("POD") stands for the pod, not a container.
        "container": "" if container == "POD" else container,
    }
