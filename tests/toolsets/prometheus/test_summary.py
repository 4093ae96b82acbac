"""Summaries of query results: bounded, deterministic, strict JSON, whatever the values."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from hapi_grpc.toolsets.prometheus.client import QueryResult, Series
from hapi_grpc.toolsets.prometheus.summary import number, summarize_result, summarize_series

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e12, max_value=1e12),
)
sample_lists = st.lists(values, min_size=0, max_size=30).map(
    lambda vs: tuple((1_700_000_000.0 + 15 * i, v) for i, v in enumerate(vs))
)
series_strategy = st.builds(
    Series,
    labels=st.dictionaries(st.sampled_from(["pod", "job", "code"]), st.text(max_size=5)),
    samples=sample_lists,
)


def series(*vals: float) -> Series:
    return Series({"pod": "a"}, tuple((1000.0 + 60 * i, v) for i, v in enumerate(vals)))


def test_trends() -> None:
    rising = summarize_series(series(1, 2, 3, 4, 5))
    assert rising["trend"] == {"direction": "rising", "change": 4.0, "slope_per_minute": 1.0}
    assert summarize_series(series(5, 4, 3, 2, 1))["trend"]["direction"] == "falling"
    assert summarize_series(series(7, 7, 7))["trend"]["direction"] == "flat"
    huge = summarize_series(series(-1e308, 0, 1e308))
    assert huge["trend"]["direction"] == "rising" and huge["trend"]["change"] == "+Inf"
    assert huge["mean"] == 0
    # Noise around a level is flat, not a trend.
    assert summarize_series(series(10, 11, 10, 11, 10, 11, 10))["trend"]["direction"] == "flat"
    assert rising["min"] == 1 and rising["max"] == 5 and rising["mean"] == 3 and rising["last"] == 5


def test_non_finite_values_are_counted_not_averaged() -> None:
    out = summarize_series(series(1, math.nan, 3, math.inf, -math.inf))
    assert out["nan_points"] == 1 and out["inf_points"] == 2
    assert (out["min"], out["max"], out["mean"], out["last"]) == (1, 3, 2, "-Inf")
    one = summarize_series(series(42))
    assert one["min"] == one["max"] == one["last"] == 42 and "trend" not in one
    stale = summarize_series(series(math.nan))
    assert stale["last"] == "NaN" and "min" not in stale


def test_numbers_keep_whole_values_exact() -> None:
    assert number(536_870_912) == 536_870_912
    assert number(0.123456789) == 0.123457
    assert number(math.nan) == "NaN" and number(-math.inf) == "-Inf"


def test_vector_shows_the_largest_first_and_counts_the_rest() -> None:
    result = QueryResult(
        "vector",
        tuple(Series({"pod": f"p{i}"}, ((100.0, float(i)),)) for i in range(25)),
    )
    out = summarize_result(result, max_series=3)
    assert [s["labels"]["pod"] for s in out["series"]] == ["p24", "p23", "p22"]
    assert out["series_total"] == 25 and out["series_not_shown"] == 22
    assert out["time"] == 100


@settings(max_examples=60, deadline=None)
@given(st.lists(series_strategy, max_size=12), st.integers(min_value=1, max_value=5))
def test_summary_is_bounded_deterministic_strict_json(
    all_series: list[Series], max_series: int
) -> None:
    result = QueryResult("matrix", tuple(all_series))
    out = summarize_result(result, max_series=max_series)
    assert len(out["series"]) == min(len(all_series), max_series)
    assert out.get("series_not_shown", 0) == len(all_series) - len(out["series"])
    text = json.dumps(out, allow_nan=False)  # raises on NaN/Infinity
    reversed_out = summarize_result(
        QueryResult("matrix", tuple(reversed(all_series))), max_series=max_series
    )
    assert summarize_result(result, max_series=max_series) == out
    if len({repr(sorted(s.labels.items())) for s in all_series}) == len(all_series):
        assert reversed_out == out  # the order of the answer does not matter
    for s in out["series"]:
        if "min" in s:
            assert s["min"] <= s["max"]
            assert (
                s["trend"]["direction"] in ("rising", "falling", "flat") if "trend" in s else True
            )
    assert len(text) < 2000 * (max_series + 1)
