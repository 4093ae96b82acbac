"""Remediation history: what was done to a target before, and did it work.

`RemediationHistory` is the port (embedded records or Data Storage's
`/api/v1/remediation-history/context`); `records` holds its shapes,
`context.build_context` the comparison both sources share, and `spec_hash`
the hash they compare specs with.
"""

from __future__ import annotations

from hapi_grpc.domain.history.context import build_context
from hapi_grpc.domain.history.port import (
    HistoryUnavailableError,
    OutcomeConflictError,
    RemediationHistory,
)
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
    target_key,
)
from hapi_grpc.domain.spec_hash import spec_hash

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
