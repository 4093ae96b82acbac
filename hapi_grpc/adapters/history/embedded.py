"""The embedded remediation history: the decisions this service returned and
the outcomes controllers reported, in memory or in Redis (shared by replicas).

Design notes: docs/internals.md (`adapters/history/embedded.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from hapi_grpc.adapters.history.backends import (
    HistoryBackend,
    Limits,
    OutcomeRecord,
    decode_decision,
    decode_entry,
    encode_decision,
    encode_entry,
)
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.adapters.history.redis_store import RedisHistoryBackend
from hapi_grpc.adapters.redis_client import uses_redis
from hapi_grpc.domain.deadline import request_timeout
from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    HistoryUnavailableError,
    OutcomeConflictError,
    RemediationTargetError,
)
from hapi_grpc.domain.history import (
    Decision,
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
from hapi_grpc.domain.sensitive import redact_mapping
from hapi_grpc.domain.tenancy import Tenant

__all__ = ["EmbeddedHistory", "build_embedded_history"]

T = TypeVar("T")

# A history read or write never waits longer than this, whatever the budget.
OP_TIMEOUT = 1.0


def build_embedded_history(url: str | None, limits: Limits = Limits()) -> EmbeddedHistory:
    """Redis for `redis://` / `rediss://` URLs (the result store's), else memory."""
    if uses_redis(url):
        return EmbeddedHistory(RedisHistoryBackend(url or "", limits=limits))
    return EmbeddedHistory(MemoryHistoryBackend(limits))


class EmbeddedHistory:
    """`RemediationHistory` over a `HistoryBackend`."""

    def __init__(self, backend: HistoryBackend, clock: Callable[[], float] = time.time) -> None:
        self._backend = backend
        self._clock = clock

    async def context(
        self, target: TargetResource, current_spec_hash: str, windows: Windows = Windows()
    ) -> HistoryContext:
        now = self._clock()
        key = target_key(target)
        raw = await _bounded(self._backend.outcomes_of_target(key, now - windows.tier2))
        entries = [decoded[0] for decoded in map(decode_entry, raw) if decoded is not None]
        return build_context(key, current_spec_hash, entries, windows, now)

    async def by_remediation_id(
        self, remediation_id: str, tenant: Tenant = Tenant()
    ) -> RemediationRecord:
        key = tenant.key(remediation_id)
        decision = decode_decision(await _bounded(self._backend.get_decision(key)))
        raw = await _bounded(self._backend.outcomes_of(key))
        entries = [decoded[0] for decoded in map(decode_entry, raw) if decoded is not None]
        entries.sort(key=lambda e: e.attempt)
        return RemediationRecord(remediation_id, decision, tuple(entries))

    async def record_decision(self, decision: Decision) -> None:
        key = decision.tenant.key(decision.remediation_id)
        await _bounded(self._backend.put_decision(key, encode_decision(decision)))

    async def record_outcome(self, report: OutcomeReport) -> OutcomeAck:
        # Everything is looked up and kept within the report's tenant: another
        # tenant's remediation under the same id is never reached, nor revealed.
        tenant = report.tenant
        key = tenant.key(report.remediation_id)
        decision = decode_decision(await _bounded(self._backend.get_decision(key)))
        if decision is not None and decision.recovery_attempt + 1 != report.attempt:
            # One decision is kept per remediation, the latest: attempt n carries out
            # the decision of recovery attempt n - 1 (the first analysis is 0), and a
            # report of another attempt must not be credited with its confidence.
            decision = None
        if decision is not None and target_key(decision.target) != target_key(report.target):
            raise RemediationTargetError(
                f"remediation_id {report.remediation_id!r} attempt {report.attempt} was"
                f" decided for another target than {target_key(report.target)!r}; report"
                " the target of its decision (AnalysisResult.target_resource)"
            )
        now = self._clock()
        entry = joined(report, decision, now)
        ack = OutcomeAck(
            recorded_at=now,
            decision_known=decision is not None,
            confidence=entry.confidence,
            automated=entry.automated,
        )
        fingerprint = report.fingerprint()
        data = encode_entry(
            entry,
            fingerprint=fingerprint,
            recorded_at=ack.recorded_at,
            decision_known=ack.decision_known,
        )
        record = OutcomeRecord(
            key=key,
            attempt=report.attempt,
            target=target_key(report.target),
            tenant=tenant.scope,
            failed=report.outcome is Outcome.FAILED,
            recorded_at=now,
            data=data,
        )
        existing = await _bounded(self._backend.add_outcome(record))
        if existing is None:
            return ack
        decoded = decode_entry(existing)
        if decoded is None or decoded[1].get("fingerprint") != fingerprint:
            raise OutcomeConflictError(
                f"a different outcome was already reported for remediation"
                f" {report.remediation_id!r} attempt {report.attempt}"
            )
        extra = decoded[1]
        return OutcomeAck(
            recorded_at=float(extra.get("recorded_at", 0.0)),
            decision_known=bool(extra.get("decision_known", False)),
            already_recorded=True,
        )

    async def close(self) -> None:
        await self._backend.close()


def joined(report: OutcomeReport, decision: Decision | None, now: float) -> HistoryEntry:
    """The history entry of `report` (completed `now` unless it says an earlier
    time), with what `decision` knew; secret-named parameters lose their values."""
    # A time ahead of now (a skewed clock, or any date the contract allows) would
    # keep the entry inside the look-back windows long after it happened.
    completed = min(report.completed_at, now) if report.completed_at is not None else now
    return HistoryEntry(
        remediation_uid=report.remediation_id,
        completed_at=completed,
        outcome=report.outcome,
        attempt=report.attempt,
        signal_type=decision.signal_type if decision else "",
        signal_fingerprint=decision.signal_fingerprint if decision else "",
        workflow_id=report.workflow_id,
        action_type=_action_type(report, decision),
        workflow_version=report.executed.version if report.executed else "",
        parameters=redact_mapping(report.executed.parameters) if report.executed else {},
        confidence=decision.confidence if decision else None,
        automated=decision.automated if decision else None,
        signal_resolved=report.signal_cleared,
        pre_spec_hash=report.pre_spec_hash,
        post_spec_hash=report.post_spec_hash,
        failure_reason=report.failure.reason if report.failure else "",
    )


def _action_type(report: OutcomeReport, decision: Decision | None) -> str | None:
    """The executed workflow's action type: as resolved with the report, else the
    decision's when it chose that workflow; None when nothing ran or it is unknown."""
    if report.executed is None:
        return None
    if report.action_type:
        return report.action_type
    if decision is not None and decision.workflow_id == report.workflow_id:
        return decision.action_type or None
    return None


async def _bounded(operation: Coroutine[Any, Any, T]) -> T:
    """`operation` within the caller's budget (at most OP_TIMEOUT); a backend
    failure or timeout is HistoryUnavailableError."""
    try:
        timeout = request_timeout(OP_TIMEOUT)
    except BudgetExhaustedError:
        operation.close()  # never sent: not left behind as an un-awaited coroutine
        raise
    try:
        # A timeout scope, not wait_for: no task of its own per history operation.
        async with asyncio.timeout(timeout):
            return await operation
    except Exception as exc:
        # Timeouts, connection errors and the Redis client's own errors.
        if isinstance(exc, TimeoutError | OSError) or type(exc).__module__.startswith("redis"):
            raise HistoryUnavailableError(
                f"remediation history unavailable: {type(exc).__name__}"
            ) from None
        raise
