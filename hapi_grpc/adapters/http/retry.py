"""One policy for retrying outgoing HTTP: per-attempt budgets, backoff, Retry-After, slots.

Design notes: docs/internals.md (`adapters/http/retry.py`).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from hapi_grpc.domain.deadline import current_budget, request_timeout
from hapi_grpc.domain.errors import BudgetExhaustedError, ResourceExhaustedError

T = TypeVar("T")

# A timeout within this much of the budget's end is the budget's doing.
_BUDGET_SLACK = 0.05
_MAX_RETRIES_LIMIT = 10


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How one adapter retries. Every field is a deliberate difference between adapters.

    attempt_timeout: seconds one attempt may take (clipped to the budget).
    max_retries: retries after the first attempt (0..10).
    backoff_base, backoff_cap: exponential backoff, base * 2**(retry-1), capped.
    jitter: full jitter (uniform in [0, backoff]) so clients that failed
        together do not come back together; False waits the whole backoff.
    retry_after_cap: a longer `Retry-After` means "not coming back soon":
        give up at once rather than hold the caller.
    min_attempt_seconds: an attempt that would get less time than this before
        the deadline is not started.
    retry_timeouts_in_full: a timed-out attempt is retried only when the
        budget still holds a full `attempt_timeout` (for dependencies whose
        answers take long, like model completions).
    """

    attempt_timeout: float
    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    jitter: bool = True
    retry_after_cap: float = 60.0
    min_attempt_seconds: float = 0.1
    retry_timeouts_in_full: bool = False

    def __post_init__(self) -> None:
        if self.attempt_timeout <= 0:
            raise ValueError("attempt_timeout must be positive")
        if not 0 <= self.max_retries <= _MAX_RETRIES_LIMIT:
            raise ValueError(f"max_retries must be within 0..{_MAX_RETRIES_LIMIT}")
        if min(self.backoff_base, self.backoff_cap, self.retry_after_cap) < 0:
            raise ValueError("backoffs and the Retry-After cap must not be negative")
        if self.min_attempt_seconds <= 0:
            raise ValueError("min_attempt_seconds must be positive")

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def backoff(self, retry: int) -> float:
        """Wait before retry `retry` (1-based) when the server named none."""
        rng = random.uniform if self.jitter else _upper
        return full_jitter(retry, self.backoff_base, self.backoff_cap, rng=rng)


def _upper(low: float, high: float) -> float:
    return high


class TransientError(Exception):
    """An attempt failed in a way worth retrying: timeout, dropped connection, 429, 5xx.

    `reason` must already be safe to show (redacted, no URL, no body).
    """

    def __init__(
        self, reason: str, retry_after: float | None = None, *, timed_out: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.timed_out = timed_out


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt may use: its number (1-based) and its timeout."""

    number: int
    timeout: float
    # True when the caller's budget, not the policy, set `timeout`.
    clipped: bool


class RequestSlots:
    """At most `limit` requests in flight; further callers queue inside their deadline.

    A caller that cannot get a slot before its budget (less the minimum
    attempt time) runs out gets `ResourceExhaustedError` with a retry hint:
    the recent mean time a slot is held.
    """

    def __init__(self, limit: int, what: str) -> None:
        if limit < 1:
            raise ValueError("the slot limit must be at least 1")
        self.limit = limit
        self._what = what
        self._free = asyncio.Semaphore(limit)
        self._waiting = 0
        self._held = 0
        self._mean_hold = 1.0  # seconds; updated as requests finish

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def in_use(self) -> int:
        return self._held

    async def acquire(self, max_wait: float) -> float:
        """Take a slot, waiting at most `max_wait` seconds; returns the time taken."""
        if not self._free.locked():
            await self._free.acquire()  # a free slot: no wait
            self._held += 1
            return time.monotonic()
        if max_wait <= 0:
            raise self._refusal()
        self._waiting += 1
        try:
            async with asyncio.timeout(max_wait):
                await self._free.acquire()
        except TimeoutError:
            raise self._refusal() from None
        finally:
            self._waiting -= 1
        self._held += 1
        return time.monotonic()

    def release(self, taken_at: float) -> None:
        held = time.monotonic() - taken_at
        self._mean_hold += 0.1 * (held - self._mean_hold)
        self._held -= 1
        self._free.release()

    def _refusal(self) -> ResourceExhaustedError:
        retry_after = max(1.0, round(self._mean_hold, 1))
        return ResourceExhaustedError(
            f"{self._what}: all {self.limit} request slots are busy and none freed up "
            "before the caller's deadline",
            retry_after=retry_after,
        )


async def run_attempts(
    policy: RetryPolicy,
    what: str,
    send: Callable[[Attempt], Awaitable[T]],
    *,
    fail: Callable[[str], Exception],
    log: logging.Logger,
    on_retry: Callable[[], None] | None = None,
    slots: RequestSlots | None = None,
) -> T:
    """`await send(attempt)` until it returns, raises a non-transient error, or the policy
    (or the budget) says stop.

    `send` enforces `attempt.timeout` itself (raising `TimeoutError`) and
    raises `TransientError` for anything worth another attempt. `fail(message)`
    builds the adapter's error for giving up; `what` names the request in
    messages and logs ("openai request", "Data Storage search (POST ...)").
    """
    for number in range(1, policy.attempts + 1):
        try:
            return await _attempt(policy, what, send, number, slots)
        except TransientError as exc:
            failure = exc
        # Raised outside the except block: an implicit __context__ would carry
        # the original exception (and whatever it held) into tracebacks.
        if number == policy.attempts:
            raise fail(f"{what} failed after {number} attempt(s): {failure.reason}")
        delay = _wait(policy, what, number, failure, fail)
        log.info(
            "%s: attempt %d of %d failed (%s); retrying in %.2fs",
            what,
            number,
            policy.attempts,
            failure.reason,
            delay,
        )
        if on_retry is not None:
            on_retry()
        await asyncio.sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def _attempt(
    policy: RetryPolicy,
    what: str,
    send: Callable[[Attempt], Awaitable[T]],
    number: int,
    slots: RequestSlots | None,
) -> T:
    taken_at = None
    if slots is not None:
        budget = current_budget()
        left = math.inf if budget is None else budget.remaining()
        max_wait = min(policy.attempt_timeout, left - policy.min_attempt_seconds)
        taken_at = await slots.acquire(max_wait)
    try:
        # BudgetExhaustedError when less than the minimum attempt time is left.
        timeout = request_timeout(policy.attempt_timeout, floor=policy.min_attempt_seconds)
        clipped = timeout < policy.attempt_timeout
        try:
            return await send(Attempt(number, timeout, clipped))
        except TimeoutError:
            budget = current_budget()
            if clipped and budget is not None and budget.remaining() < _BUDGET_SLACK:
                raise BudgetExhaustedError(
                    f"{what} did not finish before the caller's deadline ({timeout:.2f}s)"
                ) from None
            raise TransientError(f"timed out after {timeout:.3g}s", timed_out=True) from None
    finally:
        if slots is not None and taken_at is not None:
            slots.release(taken_at)


def _wait(
    policy: RetryPolicy,
    what: str,
    retry: int,
    failure: TransientError,
    fail: Callable[[str], Exception],
) -> float:
    """The wait before the next attempt; raises `fail(...)` if it cannot fit."""
    delay = policy.backoff(retry)
    retry_after = failure.retry_after
    if retry_after is not None:
        if retry_after > policy.retry_after_cap:
            raise fail(
                f"{what} failed: {failure.reason}; Retry-After {retry_after:g}s is longer "
                f"than the {policy.retry_after_cap:g}s this client waits"
            )
        # Retry-After is a floor: never sooner than the server asked; jittered
        # backoff may still spread clients that were told the same.
        delay = max(delay, retry_after)
    budget = current_budget()
    if budget is not None:
        left = budget.remaining()
        if (
            failure.timed_out
            and policy.retry_timeouts_in_full
            and delay + policy.attempt_timeout > left
        ):
            raise fail(
                f"{what} failed: {failure.reason}; not retried: the remaining"
                f" {max(left, 0):.2f}s cannot hold another full attempt"
                f" ({policy.attempt_timeout:g}s)"
            )
        if delay + policy.min_attempt_seconds >= left:
            wait = (
                f"Retry-After {retry_after:g}s"
                if retry_after is not None and retry_after >= delay
                else f"backoff {delay:.2f}s"
            )
            raise fail(
                f"{what} failed: {failure.reason}; no time to retry before the deadline "
                f"({wait} leaves less than {policy.min_attempt_seconds:g}s of the remaining "
                f"{max(left, 0):.2f}s)"
            )
    return delay


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
