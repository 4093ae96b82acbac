"""The parameter validation attempts of one investigation and their shared budget.

Design notes: docs/internals.md (`domain/toolsets/workflow_catalog/ledger.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hapi_grpc.domain.catalog import Declarations
from hapi_grpc.domain.parameters import ValidationOutcome
from hapi_grpc.domain.result import ValidationAttempt, ValidationSource
from hapi_grpc.domain.sensitive import redact_mapping
from hapi_grpc.domain.toolsets.jsontext import canonical_json

__all__ = ["ValidationLedger"]


class ValidationLedger:
    __slots__ = (
        "_declared",
        "_valid",
        "attempts",
        "max_attempts",
        "used",
    )

    def __init__(self, max_attempts: int) -> None:
        self.max_attempts = max_attempts
        self.attempts: list[ValidationAttempt] = []
        self.used = 0
        self._valid: dict[tuple[str, str], ValidationOutcome] = {}
        self._declared: dict[str, Declarations] = {}  # workflow id -> its validated schema

    @property
    def remaining(self) -> int:
        return max(0, self.max_attempts - self.used)

    @property
    def exhausted(self) -> bool:
        return self.used >= self.max_attempts

    def record(
        self,
        workflow_id: str,
        proposed: Mapping[str, Any] | None,
        outcome: ValidationOutcome,
        source: ValidationSource,
        declared: Declarations | None = None,
    ) -> ValidationAttempt:
        """Spend one attempt on a parameter validation and record it (with the
        schema it ran against, `declared`, when it passed)."""
        self.used += 1
        attempt = ValidationAttempt(
            attempt=len(self.attempts) + 1,
            workflow_id=workflow_id,
            parameters=redact_mapping(dict(proposed or {})),
            errors=outcome.errors,
            valid=outcome.valid,
            source=source,
        )
        self.attempts.append(attempt)
        if outcome.valid:
            self._valid[(workflow_id, canonical_json(dict(proposed or {})))] = outcome
            self._valid[(workflow_id, canonical_json(outcome.sanitized))] = outcome
            if declared is not None:
                self._declared[workflow_id] = declared
        return attempt

    def charge(self) -> None:
        """Spend one attempt on a final answer rejected before any parameter check."""
        self.used += 1

    def confirmed(
        self, workflow_id: str, parameters: Mapping[str, Any]
    ) -> ValidationOutcome | None:
        """The earlier passing verdict for exactly these parameters, if any."""
        return self._valid.get((workflow_id, canonical_json(dict(parameters))))

    def declarations(self, workflow_id: str) -> Declarations | None:
        """The schema a passing validation of `workflow_id` ran against, if kept."""
        return self._declared.get(workflow_id)
