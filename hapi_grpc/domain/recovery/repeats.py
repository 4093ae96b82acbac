"""Whether a selection repeats a failed execution, and the check that refuses it.

Design notes: docs/internals.md (`domain/recovery/repeats.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hapi_grpc.domain.quantity import QuantityError, parse_quantity
from hapi_grpc.domain.recovery import PreviousExecution, RecoveryContext
from hapi_grpc.domain.recovery.failures import classify
from hapi_grpc.domain.result import HumanReviewReason
from hapi_grpc.domain.selection_gate import Candidate, Veto

__all__ = ["failed_repeat", "recovery_check", "same_parameters"]

SOURCE = "recovery"
_MAX_QUANTITY_CHARS = 64  # longer text is no quantity; not parsed


def same_parameters(proposed: Mapping[str, Any], executed: Mapping[str, Any]) -> bool:
    """True when every parameter both give has the same value (see module docstring)."""
    return all(_same(value, executed[key]) for key, value in proposed.items() if key in executed)


def failed_repeat(
    recovery: RecoveryContext | None, workflow_id: str, parameters: Mapping[str, Any]
) -> tuple[int, PreviousExecution] | None:
    """The latest failed execution (1-based position, execution) this selection
    repeats and whose failure a repeat would not fix; None when there is none."""
    if recovery is None:
        return None
    executions = recovery.previous_executions
    for position in range(len(executions), 0, -1):
        previous = executions[position - 1]
        if previous.workflow.workflow_id != workflow_id:
            continue
        if classify(previous.failure.reason).repeat_allowed:
            continue
        if same_parameters(parameters, previous.workflow.parameters):
            return position, previous
    return None


async def recovery_check(candidate: Candidate) -> Veto | None:
    """Selection check: refuses a repeat of a failed execution (see `failed_repeat`)."""
    found = failed_repeat(candidate.incident.recovery, candidate.workflow_id, candidate.parameters)
    if found is None:
        return None
    position, previous = found
    failure = previous.failure
    return Veto(
        HumanReviewReason.REPEATS_FAILED_REMEDIATION,
        f"{candidate.workflow_id} with these parameters is what previous execution"
        f" {position} ran, and it failed with {failure.reason[:64]}"
        f" ({classify(failure.reason).label}); the same would fail again",
        f"{SOURCE}:execution-{position}",
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, str) and isinstance(b, str) and a.strip() == b.strip():
        return True
    if isinstance(a, str | int | float) and isinstance(b, str | int | float):
        # Quantities, spelled two ways or as a number on one side and text on the other.
        if any(isinstance(t, str) and len(t) > _MAX_QUANTITY_CHARS for t in (a, b)):
            return False  # parsing megabytes of digits would hold the event loop for seconds
        try:
            return parse_quantity(a) == parse_quantity(b)
        except (QuantityError, TypeError):
            return False
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
