"""Recovery: a new decision after a remediation of the incident failed.

Design notes: docs/internals.md (`domain/recovery/__init__.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hapi_grpc.domain.execution import ExecutedWorkflow, ExecutionFailure
from hapi_grpc.domain.levels import Severity

__all__ = ["OriginalAnalysis", "PreviousExecution", "RecoveryContext"]


@dataclass(frozen=True, slots=True)
class OriginalAnalysis:
    """The root cause analysis a previous decision was based on."""

    summary: str = ""
    signal_type: str = ""
    severity: Severity | None = None
    contributing_factors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PreviousExecution:
    workflow: ExecutedWorkflow
    failure: ExecutionFailure
    rationale: str = ""
    original_analysis: OriginalAnalysis = OriginalAnalysis()
    execution_ref: str = ""
    engine_summary: str = ""  # untrusted text


@dataclass(frozen=True, slots=True)
class RecoveryContext:
    attempt_number: int
    max_attempts: int
    previous_executions: tuple[PreviousExecution, ...] = ()

    @property
    def exhausted(self) -> bool:
        """The controller's recovery attempts are spent: a human decides."""
        return self.attempt_number > self.max_attempts
