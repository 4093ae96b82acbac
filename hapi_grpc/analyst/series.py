"""Metric reads: the series about a workload's Pods, and what their summaries say.

Selectors name the Pods read (every replica, by exact name) rather than a name
prefix, and the container when one matters. `gauge_names` asks which metric names
exist for those Pods, so growth is looked for in every gauge about them (heap,
goroutines, open files, resident memory) and not only in the series a query's text
calls memory. Counters (`_total`, `_count`, `_sum`, `_bucket`, `_created`) rise by
construction and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import re2

from hapi_grpc.analyst.conversation import Reads, Step
from hapi_grpc.toolsets.prometheus import LABEL_VALUES_TOOL, RANGE_TOOL, PrometheusToolset

__all__ = ["gauge_names", "pod_selector", "range_read", "series_of"]

WINDOW = "6h"
_COUNTER = re2.compile(r"_(?:total|count|sum|bucket|created|info)$")
_MAX_GAUGES = 6


def _escaped(name: str) -> str:
    return name.replace(".", "\\\\.")


def pod_selector(namespace: str, pods: Iterable[str], container: str = "") -> str:
    """`namespace="ns",pod=~"a|b"[,container="c"]` for the Pods read."""
    names = sorted({p for p in pods if p})
    parts = [f'namespace="{namespace}"']
    if names:
        parts.append('pod=~"' + "|".join(_escaped(n) for n in names[:20]) + '"')
    if container:
        parts.append(f'container="{container}"')
    return ",".join(parts)


def range_read(reads: Reads, query: str, window: str = WINDOW) -> Step | dict[str, Any]:
    """The range summary of `query` once read, else the read (not offered: {})."""
    if RANGE_TOOL not in reads.offered:
        return {}
    found = reads.returned(RANGE_TOOL, {"query": query}, PrometheusToolset.data_key)
    if found is None:
        return RANGE_TOOL, {"query": query, "range": window}
    return found


def gauge_names(reads: Reads, selector: str) -> Step | list[str]:
    """The gauge metric names that exist for `selector`, once listed, else the listing."""
    if LABEL_VALUES_TOOL not in reads.offered:
        return []
    arguments = {"label": "__name__", "match": ["{" + selector + "}"]}
    found = reads.returned(LABEL_VALUES_TOOL, arguments, PrometheusToolset.data_key)
    if found is None:
        return LABEL_VALUES_TOOL, arguments
    values = found.get("values") or found.get("data") or []
    names = [str(v) for v in values if isinstance(v, str) and not _COUNTER.search(v)]
    return sorted(names)[:_MAX_GAUGES]


def series_of(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The series of a range summary (each with labels, min, max, last, trend)."""
    return [s for s in summary.get("series") or [] if isinstance(s, dict)]


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
