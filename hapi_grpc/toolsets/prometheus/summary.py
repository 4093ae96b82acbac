"""Compact, deterministic summaries of query results for the model.

Design notes: docs/internals.md (`toolsets/prometheus/summary.py`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hapi_grpc.domain.sensitive import clip
from hapi_grpc.toolsets.prometheus.client import QueryResult, Series

__all__ = ["number", "summarize_result", "summarize_series"]

DEFAULT_MAX_SERIES = 10
# A fitted change smaller than this share of the value spread is noise: "flat".
FLAT_SHARE = 0.2
_MAX_LABEL_VALUE = 200
_MAX_LABELS = 30


def number(value: float) -> float | str:
    """A JSON-safe number, or "NaN"/"+Inf"/"-Inf".

    Whole numbers and magnitudes of 1e5 and more are rounded to integers
    (bytes, counts); smaller fractions keep 6 significant digits."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() or 1e5 <= abs(value) < 2.0**53:
        # Whole numbers stay exact: a working set equal to its limit must read as equal.
        return float(round(value))
    return float(f"{value:.6g}")


def _labels(labels: Mapping[str, str]) -> dict[str, str]:
    items = sorted(labels.items())[:_MAX_LABELS]
    return {k: clip(v, _MAX_LABEL_VALUE) for k, v in items}


def _scale(values: Sequence[float]) -> float:
    """The largest magnitude (1.0 for all zeros): sums of values divided by it cannot overflow."""
    return max((abs(v) for v in values), default=0.0) or 1.0


def _mean(values: Sequence[float]) -> float:
    scale = _scale(values)
    return scale * (math.fsum(v / scale for v in values) / len(values))


def _trend(points: Sequence[tuple[float, float]]) -> dict[str, Any]:
    first_t, first_v = points[0]
    last_t, last_v = points[-1]
    change = last_v - first_v  # may overflow to ±inf: shown as such
    scale = _scale([v for _, v in points])
    t0 = first_t
    ts = [t - t0 for t, _ in points]
    vs = [v / scale for _, v in points]
    n = len(points)
    mean_t = math.fsum(ts) / n
    mean_v = math.fsum(vs) / n
    var_t = math.fsum((t - mean_t) ** 2 for t in ts)
    cov = math.fsum((t - mean_t) * (v - mean_v) for t, v in zip(ts, vs, strict=True))
    scaled_slope = cov / var_t if var_t > 0 else 0.0
    # Compared in scaled units, so nothing overflows on the way to the verdict.
    fitted_change = scaled_slope * (last_t - first_t)
    scaled_spread = max(vs) - min(vs)
    if scaled_spread <= 0 or abs(fitted_change) < FLAT_SHARE * scaled_spread:
        direction = "flat"
    else:
        direction = "rising" if fitted_change > 0 else "falling"
    return {
        "direction": direction,
        "change": number(change),
        "slope_per_minute": number(scaled_slope * 60 * scale),
    }


def summarize_series(series: Series) -> dict[str, Any]:
    """Labels and statistics of one series (see the module docstring)."""
    samples = series.samples
    out: dict[str, Any] = {"labels": _labels(series.labels), "points": len(samples)}
    if samples:
        out["from"] = number(samples[0][0])
        out["to"] = number(samples[-1][0])
    finite = [(t, v) for t, v in samples if math.isfinite(v) and math.isfinite(t)]
    nan = sum(1 for _, v in samples if math.isnan(v))
    inf = sum(1 for _, v in samples if math.isinf(v))
    if nan:
        out["nan_points"] = nan
    if inf:
        out["inf_points"] = inf
    if samples:
        out["last"] = number(samples[-1][1])
    if not finite:
        return out
    values = [v for _, v in finite]
    lo, hi = min(values), max(values)
    out["min"] = number(lo)
    out["max"] = number(hi)
    out["mean"] = number(_mean(values))
    if len(finite) >= 2:
        out["trend"] = _trend(finite)
    return out


def _sort_key(series: Series) -> tuple[float, str]:
    last = series.samples[-1][1] if series.samples else math.nan
    rank = -last if not math.isnan(last) else math.inf
    return rank, repr(sorted(series.labels.items()))


def summarize_result(
    result: QueryResult, *, max_series: int = DEFAULT_MAX_SERIES
) -> dict[str, Any]:
    """The summary of one query answer, bounded by `max_series`."""
    if max_series < 1:
        raise ValueError("max_series must be >= 1")
    out: dict[str, Any] = {"result_type": result.result_type}
    if result.result_type == "scalar" and result.scalar is not None:
        out["time"] = number(result.scalar[0])
        out["value"] = number(result.scalar[1])
    elif result.result_type == "string" and result.string is not None:
        out["time"] = number(result.string[0])
        out["value"] = clip(result.string[1], 500)
    else:
        ordered = sorted(result.series, key=_sort_key)
        shown = ordered[:max_series]
        out["series_total"] = len(ordered)
        if result.result_type == "vector":
            out["series"] = [
                {"labels": _labels(s.labels), "value": number(s.samples[0][1])}
                if s.samples
                else {"labels": _labels(s.labels)}
                for s in shown
            ]
            if shown and shown[0].samples:
                out["time"] = number(shown[0].samples[0][0])
        else:
            out["series"] = [summarize_series(s) for s in shown]
        if len(ordered) > len(shown):
            out["series_not_shown"] = len(ordered) - len(shown)
    if result.warnings:
        out["warnings"] = list(result.warnings)
    return out
