"""Retry timing shared by the HTTP adapters: backoff with full jitter, Retry-After."""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable

from hapi_grpc.domain.deadline import current_budget


def full_jitter(
    attempt: int,
    base: float,
    cap: float,
    rng: Callable[[float, float], float] = random.uniform,
) -> float:
    """Delay before retry `attempt` (1-based): uniform in [0, min(cap, base * 2**(attempt-1))].

    Full jitter spreads the retries of many clients that failed together, so
    they do not hit a recovering service in lockstep.
    """
    exponent = min(max(attempt - 1, 0), 62)  # 2**62 * base overflows nothing and exceeds any cap
    return rng(0.0, min(cap, base * (2**exponent)))


def parse_retry_after(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP-date).

    None when absent or unparsable; never negative.
    """
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP-date is GMT by definition
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def remaining_budget() -> float:
    """Seconds left in the caller's budget; infinity when there is none."""
    budget = current_budget()
    return math.inf if budget is None else budget.remaining()
