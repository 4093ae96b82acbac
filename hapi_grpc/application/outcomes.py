"""Reported outcomes and the decisions they belong to, in the remediation history.

Design notes: docs/internals.md (`application/outcomes.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from typing import TypeVar

from hapi_grpc.domain import result as r
from hapi_grpc.domain.catalog import WorkflowCatalog
from hapi_grpc.domain.deadline import Budget, budget_scope, detached_context, request_timeout
from hapi_grpc.domain.history import (
    Decision,
    Outcome,
    OutcomeAck,
    OutcomeReport,
    RemediationHistory,
)
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.observability import metrics

__all__ = ["OutcomeService", "confidence_bucket"]

log = logging.getLogger(__name__)

# Lower bounds of the calibration buckets: [0, 0.5), [0.5, 0.6), ... [0.9, 1.0].
CONFIDENCE_BUCKETS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)
OUTCOME_WORKFLOW_LABELS = 200  # distinct workflow label values, then "other"

DECISION_WAIT_SECONDS = 0.05  # the longest a result waits for its decision to be kept
ACTION_TYPE_SECONDS = 0.5  # the longest a catalog lookup of a workflow's action type takes

_Kept = TypeVar("_Kept", Decision, OutcomeReport)

_RESULT = {Outcome.SUCCESS: "succeeded", Outcome.FAILED: "failed", Outcome.ESCALATED: "declined"}


def confidence_bucket(confidence: float) -> str:
    """The calibration bucket of `confidence`, e.g. "0.8-0.9" (the last is "0.9-1.0")."""
    index = max((i for i, b in enumerate(CONFIDENCE_BUCKETS) if confidence >= b), default=0)
    lower = CONFIDENCE_BUCKETS[index]
    upper = CONFIDENCE_BUCKETS[index + 1] if index + 1 < len(CONFIDENCE_BUCKETS) else 1.0
    return f"{lower:.1f}-{upper:.1f}"


async def with_action_type(catalog: WorkflowCatalog | None, item: _Kept) -> _Kept:
    """`item` with the catalog's action type of its workflow; unchanged when there
    is none, or the catalog does not answer within `ACTION_TYPE_SECONDS` (never an
    error: the history then matches that remediation by workflow id only)."""
    workflow_id = item.workflow_id
    if catalog is None or not workflow_id:
        return item
    try:
        async with asyncio.timeout(request_timeout(ACTION_TYPE_SECONDS)):
            action_type = (await catalog.get_schema(workflow_id)).action_type
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # unknown id, catalog down, no budget left: unknown
        log.info(
            "action type of a workflow not known",
            extra={"workflow_id": workflow_id[:128], "error": type(exc).__name__},
        )
        return item
    return dataclasses.replace(item, action_type=action_type) if action_type else item


class OutcomeService:
    """Keeps decisions and records outcome reports in `history`, and counts the
    reports; the workflows' action types come from `catalog`."""

    def __init__(self, history: RemediationHistory, catalog: WorkflowCatalog | None = None) -> None:
        self.history = history
        self._catalog = catalog
        self._workflow_labels: set[str] = set()
        self._pending: set[asyncio.Task[None]] = set()

    async def report(self, report: OutcomeReport, budget: Budget) -> OutcomeAck:
        """The stored acknowledgement of `report` (of its first copy for a retry).

        Raises OutcomeConflictError for a different report under the same
        (remediation_id, attempt), HistoryUnavailableError when the history
        cannot record it.
        """
        with budget_scope(budget):
            report = await with_action_type(self._catalog, report)
            ack = await self.history.record_outcome(report)
        if not ack.already_recorded:  # a retry is counted once
            self._count(report, ack)
        return ack

    async def keep_decision(
        self, incident: Incident, result: r.AnalysisResult, caller: Caller
    ) -> None:
        """Keep the decision returned to `caller` in the history, best effort.

        It never costs the caller its result: the write runs on its own
        (outside the caller's deadline, bounded by the history's own timeout)
        and the result waits for it at most `DECISION_WAIT_SECONDS` (a Redis
        write takes about a millisecond). A history that cannot record (Redis
        down) only means the report that follows finds no decision and is
        recorded without its confidence.
        """
        decision = decision_of(incident, result, time.time(), caller)
        # Without the caller's deadline (nearly spent by now): it is not the write's.
        task = asyncio.create_task(self._keep(decision), context=detached_context())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), DECISION_WAIT_SECONDS)

    async def _keep(self, decision: Decision) -> None:
        try:
            decision = await with_action_type(self._catalog, decision)
            await self.history.record_decision(decision)
        except Exception as exc:  # best effort: logged, never raised
            log.warning(
                "decision not kept in the remediation history",
                extra={"remediation_id": decision.remediation_id, "error": type(exc).__name__},
            )

    def _count(self, report: OutcomeReport, ack: OutcomeAck) -> None:
        result = _RESULT[report.outcome]
        metrics.REMEDIATION_OUTCOMES.labels(
            workflow=self._workflow_label(report.workflow_id), result=result
        ).inc()
        if ack.automated and ack.confidence is not None and report.outcome is not Outcome.ESCALATED:
            metrics.DECISION_CALIBRATION.labels(
                confidence=confidence_bucket(ack.confidence), result=result
            ).inc()

    def _workflow_label(self, workflow_id: str | None) -> str:
        """Bounded: the first OUTCOME_WORKFLOW_LABELS ids get a series of their own."""
        if not workflow_id:
            return "none"
        if workflow_id in self._workflow_labels:
            return workflow_id
        if len(self._workflow_labels) < OUTCOME_WORKFLOW_LABELS:
            self._workflow_labels.add(workflow_id)
            return workflow_id
        return "other"


def decision_of(
    incident: Incident,
    result: r.AnalysisResult,
    now: float,
    caller: Caller,
) -> Decision:
    """What the history keeps of a decision returned to `caller`. It is kept under
    the answer's target only where the caller may read it, else under the
    incident's own: never in another tenant's."""
    target = result.target_resource
    if target is None or not (target.kind and target.name) or not caller.reads(target.namespace):
        signal = incident.signal
        target = r.TargetResource(signal.namespace, signal.resource_kind, signal.resource_name)
    selected = result.selected_workflow
    return Decision(
        remediation_id=incident.remediation_id,
        target=target,
        signal_type=incident.signal.signal_type,
        signal_fingerprint=incident.incident_id,
        workflow_id=selected.workflow_id if selected else None,
        workflow_version=selected.version if selected else "",
        confidence=selected.confidence if selected else None,
        automated=selected is not None and not result.needs_human_review,
        decided_at=now,
        recovery_attempt=incident.recovery.attempt_number if incident.recovery else 0,
        caller=caller.name,
    )
