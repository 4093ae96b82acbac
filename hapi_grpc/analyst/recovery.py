"""A recovery request: what was tried before and whether it may be tried again.

Read from the incident's recovery context. A workflow whose execution failed in a
way a repeat would not fix (`domain.recovery.failures`) is not proposed again,
whatever parameters it would get now: the next candidate whose premise the
evidence shows is taken. When none is left, one more search looks for a workflow
that declares itself read-only (a diagnostics snapshot changes nothing, so it
cannot repeat the failure); otherwise nothing is selected. A workflow whose own pod
never ran may run again. The answer says what was tried and how it failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from hapi_grpc.domain.catalog import TOP_K_MAX
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.recovery.failures import classify

__all__ = ["FALLBACK_SEARCH", "FailedAttempt", "RecoveryView"]

_SHOWN = 3
# The second search asks the catalog for diagnostics: only a workflow that
# declares itself read-only is taken from its results.
FALLBACK_SEARCH = {"query": "diagnostics", "similarity_threshold": 0.0, "limit": TOP_K_MAX}


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    workflow_id: str
    reason: str
    repeat_allowed: bool


@dataclass(frozen=True, slots=True)
class RecoveryView:
    """A recovery request as the analyst reads it from the incident."""

    attempt_number: int
    max_attempts: int
    failed: tuple[FailedAttempt, ...]

    @classmethod
    def of(cls, incident: Incident) -> RecoveryView | None:
        """None when the incident is no recovery request."""
        recovery = incident.recovery
        if recovery is None:
            return None
        failed = tuple(
            FailedAttempt(
                p.workflow.workflow_id,
                p.failure.reason,
                classify(p.failure.reason).repeat_allowed,
            )
            for p in recovery.previous_executions
        )
        return cls(recovery.attempt_number, recovery.max_attempts, failed)

    def objection(self, workflow_id: str) -> str | None:
        """Why `workflow_id` is not selected again; None when it may be."""
        for position in range(len(self.failed), 0, -1):
            attempt = self.failed[position - 1]
            if attempt.workflow_id == workflow_id and not attempt.repeat_allowed:
                return (
                    f"{workflow_id} was executed before (execution {position}) and failed"
                    f" with {attempt.reason}; a repeat would meet the same failure"
                )
        return None

    def history(self) -> str:
        """What was tried before, for `root_cause_assessment`."""
        shown = list(enumerate(self.failed, 1))[-_SHOWN:]
        tried = "; ".join(
            f"execution {position} ran {a.workflow_id} and failed with {a.reason}"
            + (" (its own pod never ran)" if a.repeat_allowed else "")
            for position, a in shown
        )
        return f" Recovery attempt {self.attempt_number} of {self.max_attempts}: {tried}."
