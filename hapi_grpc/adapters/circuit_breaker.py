"""A failure-rate circuit breaker for downstream services (BR-HAPI-047).

Design notes: docs/internals.md (`adapters/circuit_breaker.py`).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, TypeVar

from purgatory import AsyncCircuitBreakerFactory
from purgatory.domain.model import HalfOpenedState, OpenedState

from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    CatalogUnavailableError,
    InvalidRequestError,
    WorkflowNotFoundError,
)
from hapi_grpc.observability import metrics

if TYPE_CHECKING:
    from purgatory.service._async.circuitbreaker import AsyncCircuitBreaker

log = logging.getLogger(__name__)

T = TypeVar("T")
State = Literal["closed", "half_open", "open"]

# purgatory state names -> our names and the gauge values metrics.py documents.
_STATE_NAMES: dict[str, State] = {
    "closed": "closed",
    "half-opened": "half_open",
    "opened": "open",
}
_GAUGE_VALUE: dict[State, int] = {"closed": 0, "half_open": 1, "open": 2}

# Outcomes that say nothing about the downstream service's health: our own
# cancellation or deadline, and requests refused before they were sent.
NEUTRAL_EXCEPTIONS: tuple[type[BaseException], ...] = (
    BudgetExhaustedError,
    InvalidRequestError,
)
# Answers that prove the service is up, although the caller gets an error.
HEALTHY_EXCEPTIONS: tuple[type[BaseException], ...] = (WorkflowNotFoundError,)


class _PolicyTripped(Exception):
    """Reported to purgatory when the failure-rate policy decides to open."""


class RateCircuitBreaker:
    """Failure-rate circuit breaker around async calls.

    `await breaker.call(fn)` runs `fn()` once and counts its outcome as one
    call. Exceptions from `fn` always propagate; `CatalogUnavailableError` is
    raised without calling `fn` while the breaker is open or its half-open
    probe slots are taken. `clock` (monotonic seconds) drives both the window
    and the recovery timeout, so tests can move time without sleeping.
    Window entries are kept in `buckets` time buckets, so memory stays bounded
    and an outcome leaves the window between `window_seconds` and
    `window_seconds * (1 + 1 / buckets)` seconds after it was recorded.
    """

    def __init__(
        self,
        name: str = "datastorage",
        *,
        failure_ratio: float = 0.5,
        window_seconds: float = 300.0,
        min_calls: int = 10,
        recovery_timeout: float = 30.0,
        half_open_max_calls: int = 1,
        buckets: int = 60,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0.0 < failure_ratio <= 1.0:
            raise ValueError("failure_ratio must be in (0, 1]")
        if window_seconds <= 0 or recovery_timeout <= 0:
            raise ValueError("window_seconds and recovery_timeout must be positive")
        if min_calls < 1 or half_open_max_calls < 1 or buckets < 1:
            raise ValueError("min_calls, half_open_max_calls and buckets must be >= 1")
        self.name = name
        self._threshold = failure_ratio
        self._window = window_seconds
        self._minimum_calls = min_calls
        self._recovery_timeout = recovery_timeout
        self._half_open_max = half_open_max_calls
        self._bucket_width = window_seconds / buckets
        self._clock = clock

        # [bucket_start, calls, failures], oldest first; at most buckets + 1 long.
        self._buckets: deque[list[float]] = deque()
        self._calls = 0
        self._failures = 0
        self._opened_at = 0.0
        self._probes = 0
        # Bumped on every transition: outcomes of calls admitted under an
        # earlier generation are stale and must not move the new state.
        self._generation = 0
        self._reason = ""

        # threshold=1: purgatory opens on the first failure we report, and we
        # report only policy verdicts. ttl=inf: purgatory never half-opens on
        # its own wall clock; `_admit` does it on ours.
        self._factory = AsyncCircuitBreakerFactory(default_threshold=1, default_ttl=math.inf)
        self._factory.add_listener(self._on_purgatory_event)
        self._breaker: AsyncCircuitBreaker | None = None
        metrics.CIRCUIT_BREAKER_STATE.labels(breaker=name).set(0)

    # -- public ---------------------------------------------------------------

    @property
    def state(self) -> State:
        """Current state; an open breaker whose recovery time passed reports half_open."""
        if self._breaker is None:
            return "closed"
        state = _STATE_NAMES[self._breaker.context.state]
        if state == "open" and self._clock() >= self._opened_at + self._recovery_timeout:
            return "half_open"
        return state

    def window_counts(self) -> tuple[int, int]:
        """(calls, failures) inside the sliding window now."""
        self._expire(self._clock())
        return self._calls, self._failures

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run `fn()` through the breaker and count its outcome."""
        brk = self._breaker or await self._get_breaker()
        probe = await self._admit(brk)
        generation = self._generation
        try:
            result = await fn()
        except HEALTHY_EXCEPTIONS:
            await self._record(brk, generation, probe, None)
            raise
        except NEUTRAL_EXCEPTIONS:
            self._release(generation, probe)
            raise
        except Exception as exc:
            await self._record(brk, generation, probe, exc)
            raise
        except BaseException:
            # CancelledError and friends: the caller gave up, the service may be fine.
            self._release(generation, probe)
            raise
        await self._record(brk, generation, probe, None)
        return result

    # -- admission and accounting --------------------------------------------------

    async def _get_breaker(self) -> AsyncCircuitBreaker:
        # The in-memory unit of work never suspends, so concurrent first calls
        # get the same context; keep the first wrapper.
        brk = await self._factory.get_breaker(self.name)
        if self._breaker is None:
            self._breaker = brk
        return self._breaker

    async def _admit(self, brk: AsyncCircuitBreaker) -> bool:
        """Let a call through or fail fast; True when the call is a half-open probe."""
        ctx = brk.context
        if ctx.state == OpenedState.name:
            if self._clock() < self._opened_at + self._recovery_timeout:
                left = self._opened_at + self._recovery_timeout - self._clock()
                raise self._fail_fast(f"next probe in {left:.1f}s")
            # Take the first probe slot before publishing, so no caller that
            # runs while the event is handled can slip in beyond the limit.
            self._reason = f"recovery timeout of {self._recovery_timeout:g}s elapsed"
            self._probes = 1
            self._generation += 1
            ctx.set_state(HalfOpenedState())
            await self._publish(brk)
            return True
        if ctx.state == HalfOpenedState.name:
            if self._probes >= self._half_open_max:
                raise self._fail_fast("half-open, probe in flight")
            self._probes += 1
            return True
        return False

    def _fail_fast(self, why: str) -> CatalogUnavailableError:
        return CatalogUnavailableError(
            f"{self.name} circuit breaker open ({why}); the service was not called"
        )

    def _release(self, generation: int, probe: bool) -> None:
        """A neutral outcome: free the probe slot, count nothing."""
        if probe and generation == self._generation:
            self._probes -= 1

    async def _record(
        self, brk: AsyncCircuitBreaker, generation: int, probe: bool, exc: Exception | None
    ) -> None:
        if generation != self._generation:
            return  # admitted before the last transition: stale evidence
        ctx = brk.context
        if probe:
            self._probes -= 1
            self._generation += 1
            if exc is None:
                self._reason = "probe succeeded"
                self._reset_window()
                ctx.handle_end_request()  # half-open -> closed
            else:
                self._reason = f"probe failed ({type(exc).__name__})"
                self._opened_at = self._clock()
                ctx.handle_exception(exc)  # half-open -> open
            await self._publish(brk)
            return
        now = self._clock()
        self._expire(now)
        self._add(now, failed=exc is not None)
        if exc is not None and self._tripped():
            self._reason = (
                f"{self._failures} of {self._calls} calls failed within "
                f"{self._window:g}s (threshold {self._threshold:.0%})"
            )
            self._generation += 1
            self._opened_at = now
            ctx.handle_exception(_PolicyTripped(self._reason))  # closed -> open
            await self._publish(brk)

    def _tripped(self) -> bool:
        # Divide rather than multiply: 3 / 10 >= 0.3 holds, 3 >= 0.3 * 10 does not.
        return (
            self._calls >= self._minimum_calls and self._failures / self._calls >= self._threshold
        )

    # -- sliding window --------------------------------------------------------------

    def _add(self, now: float, *, failed: bool) -> None:
        if not self._buckets or now >= self._buckets[-1][0] + self._bucket_width:
            start = now - (now % self._bucket_width)
            self._buckets.append([start, 0, 0])
        bucket = self._buckets[-1]
        bucket[1] += 1
        self._calls += 1
        if failed:
            bucket[2] += 1
            self._failures += 1

    def _expire(self, now: float) -> None:
        horizon = now - self._window
        # Bounded: the deque never holds more than buckets + 1 entries.
        while self._buckets and self._buckets[0][0] + self._bucket_width <= horizon:
            _, calls, failures = self._buckets.popleft()
            self._calls -= int(calls)
            self._failures -= int(failures)

    def _reset_window(self) -> None:
        self._buckets.clear()
        self._calls = 0
        self._failures = 0

    # -- events ------------------------------------------------------------------------

    async def _publish(self, brk: AsyncCircuitBreaker) -> None:
        """Hand the state machine's pending events to purgatory's bus (and our listener)."""
        messages = brk.context.messages
        for _ in range(len(messages)):
            if not messages:
                break
            await brk.messagebus.handle(messages.pop(0), brk.uow)

    def _on_purgatory_event(self, name: str, event_name: str, event: object) -> None:
        if event_name != "state_changed":
            return
        state = _STATE_NAMES.get(getattr(event, "state", ""), None)
        if state is None:
            return
        metrics.CIRCUIT_BREAKER_STATE.labels(breaker=self.name).set(_GAUGE_VALUE[state])
        metrics.CIRCUIT_BREAKER_TRANSITIONS.labels(breaker=self.name, state=state).inc()
        level = logging.WARNING if state == "open" else logging.INFO
        log.log(level, "circuit breaker %s is now %s: %s", self.name, state, self._reason)
