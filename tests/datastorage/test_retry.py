"""Backoff and Retry-After parsing."""

from __future__ import annotations

import math

import pytest

from hapi_grpc.adapters.retry import full_jitter, parse_retry_after, remaining_budget
from hapi_grpc.domain.deadline import Budget, budget_scope


def upper(low: float, high: float) -> float:
    return high


@pytest.mark.parametrize(
    ("attempt", "expected"), [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (500, 1.0)]
)
def test_full_jitter_grows_exponentially_up_to_the_cap(attempt: int, expected: float) -> None:
    assert full_jitter(attempt, 0.1, 1.0, rng=upper) == pytest.approx(expected)


def test_full_jitter_draws_from_zero() -> None:
    seen: list[tuple[float, float]] = []

    def record(low: float, high: float) -> float:
        seen.append((low, high))
        return low

    assert full_jitter(3, 0.1, 1.0, rng=record) == 0.0
    assert seen == [(0.0, pytest.approx(0.4))]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("3", 3.0),
        (" 0.5 ", 0.5),
        ("-4", 0.0),
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after(header, now=lambda: now) == expected


def test_remaining_budget() -> None:
    assert remaining_budget() == math.inf
    with budget_scope(Budget.from_timeout(5.0)):
        assert 4.0 < remaining_budget() <= 5.0
