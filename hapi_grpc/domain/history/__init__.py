"""Remediation history: what was done to a target before, and did it work.

`RemediationHistory` is the port (embedded records or Data Storage's
`/api/v1/remediation-history/context`); `records` holds its shapes and
`build_context`, the comparison both sources share; `spec_hash` is the hash
they compare specs with.
"""

from __future__ import annotations

from typing import Protocol

from hapi_grpc.domain.errors import HistoryUnavailableError, OutcomeConflictError
from hapi_grpc.domain.history.records import (
    Decision,
    Effectiveness,
    HashMatch,
    HistoryContext,
    HistoryEntry,
    Outcome,
    OutcomeAck,
    OutcomeReport,
    RemediationRecord,
    Windows,
    build_context,
    target_key,
)
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.domain.spec_hash import spec_hash
from hapi_grpc.domain.tenancy import Tenant

__all__ = [
    "Decision",
    "Effectiveness",
    "HashMatch",
    "HistoryContext",
    "HistoryEntry",
    "HistoryUnavailableError",
    "Outcome",
    "OutcomeAck",
    "OutcomeConflictError",
    "OutcomeReport",
    "RemediationHistory",
    "RemediationRecord",
    "Windows",
    "build_context",
    "spec_hash",
    "target_key",
]


class RemediationHistory(Protocol):
    """History of remediations: this service's own records, or Data Storage's.

    Reads answer within the caller's budget (`domain.deadline`) or raise
    HistoryUnavailableError; they never raise for an empty history.
    """

    async def context(
        self, target: TargetResource, current_spec_hash: str, windows: Windows = Windows()
    ) -> HistoryContext:
        """The target's remediations inside `windows`, oldest first, compared
        with `current_spec_hash` (`spec_hash` of its current spec)."""
        ...

    async def by_remediation_id(
        self, remediation_id: str, tenant: Tenant = Tenant()
    ) -> RemediationRecord:
        """The decision, reported outcomes and (Data Storage) effectiveness of
        one id of `tenant` (another tenant's id is another remediation)."""
        ...

    async def record_decision(self, decision: Decision) -> None:
        """Keep a decision this service returned (its confidence, automated or
        not), under its id within its tenant (`Decision.tenant`)."""
        ...

    async def record_outcome(self, report: OutcomeReport) -> OutcomeAck:
        """Keep a report, joined with its tenant's decision of the same id and
        attempt; the stored ack again for the same report, OutcomeConflictError
        for a different one, RemediationTargetError when the decision it would
        join was for another target."""
        ...

    async def close(self) -> None: ...
