"""Time budgets that follow an investigation through every await.

Design notes: docs/internals.md (`domain/deadline.py`).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from dataclasses import dataclass
from typing import TypeVar

from hapi_grpc.domain.errors import BudgetExhaustedError

T = TypeVar("T")


@dataclass(slots=True)
class Budget:
    """A wall-clock budget measured on the monotonic clock.

    Mutable in one way only: `end_within` brings the end closer (a shutdown
    shortens every running investigation); nothing ever extends a budget.
    """

    expires_at: float  # time.monotonic() value; math.inf for "no deadline"

    @classmethod
    def from_timeout(cls, seconds: float | None) -> Budget:
        if seconds is None:
            return cls(float("inf"))
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        return self.expires_at - time.monotonic()

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0

    def shrink(self, margin: float) -> Budget:
        """A new budget that ends `margin` seconds earlier (to leave time to answer)."""
        return Budget(self.expires_at - margin)

    def end_within(self, seconds: float) -> None:
        """End this budget no later than `seconds` from now."""
        self.expires_at = min(self.expires_at, time.monotonic() + max(seconds, 0.0))


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "hapi_budget", default=None
)


def current_budget() -> Budget | None:
    return _current.get()


def detached_context() -> contextvars.Context:
    """A copy of the current context without its budget: for work a call starts
    that may outlive its deadline, still part of the call's trace."""
    context = contextvars.copy_context()
    context.run(_current.set, None)
    return context


class budget_scope:
    """Bind `budget` (never extending an enclosing one) for the enclosed block.

    A class rather than a generator-based context manager: it is entered on
    every RPC, and this form costs half as much.
    """

    __slots__ = ("_budget", "_token")

    def __init__(self, budget: Budget) -> None:
        self._budget = budget

    def __enter__(self) -> Budget:
        outer = _current.get()
        if outer is not None and outer.expires_at < self._budget.expires_at:
            self._budget = outer
        self._token = _current.set(self._budget)
        return self._budget

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)


def request_timeout(default: float, floor: float = 0.001) -> float:
    """Timeout for one downstream call: `default`, clipped to the remaining budget.

    Raises BudgetExhaustedError when nothing is left, so no request is sent
    that could not be answered in time.
    """
    budget = _current.get()
    if budget is None:
        return default
    left = budget.remaining()
    if left <= floor:
        raise BudgetExhaustedError("the caller's deadline leaves no time for this request")
    return min(default, left)


async def await_shared(task: asyncio.Task[T], waiting_for: str) -> T:
    """Await a task that other callers share, for at most the remaining budget.

    The task is shielded: this caller leaving does not cancel it. Raises
    BudgetExhaustedError when the caller's deadline runs out first; a timeout
    raised by the task itself propagates unchanged.
    """
    budget = _current.get()
    if budget is None or math.isinf(budget.expires_at):
        return await asyncio.shield(task)
    try:
        async with asyncio.timeout(max(budget.remaining(), 0.0)):
            return await asyncio.shield(task)
    except TimeoutError:
        if task.done():
            raise  # the task itself timed out, not our wait
        raise BudgetExhaustedError(
            f"the caller's deadline ran out waiting for {waiting_for}"
        ) from None
