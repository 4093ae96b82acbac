"""The selection check over a target's remediation history (`HistoryCheck`).

Design notes: docs/internals.md (`domain/history/gate.py`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hapi_grpc.domain.catalog import SearchHit
from hapi_grpc.domain.deadline import request_timeout
from hapi_grpc.domain.errors import BudgetExhaustedError, HistoryUnavailableError
from hapi_grpc.domain.history import (
    HashMatch,
    HistoryContext,
    HistoryEntry,
    Outcome,
    RemediationHistory,
    Windows,
    target_key,
)
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.recovery.failures import classify
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason, TargetResource
from hapi_grpc.domain.selection_gate import Candidate, Veto
from hapi_grpc.domain.sensitive import redact

__all__ = ["RECURRENCE", "HistoryCheck", "history_veto", "stood_down_because"]

SOURCE = "history"
RECURRENCE = 2  # successes of the same remediation in the window before the signal came back
READ_TIMEOUT = 2.0  # one target's read, at most (and within the budget)
_MAX_TARGETS = 3  # the incident's resource and up to two owners
# A decider that stood down gets one of these from the engine; when the history
# refuses its top candidate, that is the more precise reason.
_STOOD_DOWN = frozenset(
    {HumanReviewReason.NO_MATCHING_WORKFLOWS, HumanReviewReason.PRECONDITION_NOT_MET}
)
_ALTERNATIVES_CHECKED = 3


def _at(entry: HistoryEntry) -> str:
    return datetime.fromtimestamp(entry.completed_at, UTC).isoformat(timespec="minutes")


def _shown(text: str | None, limit: int = 80) -> str:
    # Ids and action types may come from Data Storage (outside text): a veto's
    # message reaches the response's warnings, so it is cut and redacted.
    return redact((text or "")[:limit])


def _same_signal(entry: HistoryEntry, signal_type: str) -> bool:
    # An entry whose signal is not known counts: when in doubt, a human looks.
    return not entry.signal_type or not signal_type or entry.signal_type == signal_type


def _ran(entry: HistoryEntry) -> str:
    """What an entry ran, as a message names it."""
    shown = [_shown(text, 128) for text in (entry.workflow_id, entry.action_type) if text]
    return " ".join([shown[0], *(f"({t})" for t in shown[1:])]) if shown else "a remediation"


def history_veto(
    context: HistoryContext,
    workflow_id: str,
    signal_type: str,
    action_type: str = "",
    ids_shown: bool = True,
) -> Veto | None:
    """What `context` says against automating `workflow_id` of type `action_type`
    (docs/internals.md); without `ids_shown`, the messages name no remediation id."""

    def uid(entry: HistoryEntry) -> str:
        return _shown(entry.remediation_uid) if ids_shown else "(id not shown)"

    target = context.target_resource
    what = f"{workflow_id} ({_shown(action_type, 64)})" if action_type else workflow_id
    for entry in reversed(context.tier1):
        if entry.outcome is not Outcome.FAILED:
            continue
        if not entry.same_remediation(workflow_id, action_type):
            continue
        failure = classify(entry.failure_reason)
        if failure.repeat_allowed:
            continue
        return Veto(
            HumanReviewReason.REPEATS_FAILED_REMEDIATION,
            f"{what}: {_ran(entry)} failed on {target} at {_at(entry)} (remediation"
            f" {uid(entry)} attempt {entry.attempt}:"
            f" {_shown(entry.failure_reason, 64) or 'no reason given'}, {failure.label});"
            " it is not run again automatically",
            f"{SOURCE}:{uid(entry) if ids_shown else 'failed'}",
        )
    successes = [
        e
        for e in context.tier1
        if e.outcome is Outcome.SUCCESS
        and e.same_remediation(workflow_id, action_type)
        and _same_signal(e, signal_type)
    ]
    if len(successes) >= RECURRENCE:
        ids = ", ".join(uid(e) for e in successes[-3:])
        return Veto(
            HumanReviewReason.RECURRING_REMEDIATION,
            f"{what}: the same remediation already succeeded {len(successes)} times on"
            f" {target} in the last {context.tier1_window / 3600:.0f}h ({ids}) and the signal"
            " is back: a recurring cause for a human, not another run",
            f"{SOURCE}:recurrence",
        )
    undone = [
        e
        for e in (*context.tier1, *context.tier2)
        if e.outcome is Outcome.SUCCESS and e.hash_match is HashMatch.PRE
    ]
    if undone:
        entry = undone[-1]
        return Veto(
            HumanReviewReason.RECURRING_REMEDIATION,
            f"the current spec of {target} is the one remediation {uid(entry)}"
            f" ({_ran(entry)}, {_at(entry)}) replaced: the fix was undone",
            f"{SOURCE}:regression",
        )
    return None


def _ref_target(ref: str) -> TargetResource | None:
    """`namespace/group/Kind/name` (an owner-chain ref) as a target."""
    parts = ref.split("/")
    if len(parts) < 4 or not parts[-1] or not parts[-2]:
        return None
    return TargetResource(namespace=parts[0], kind=parts[-2], name=parts[-1])


@dataclass
class HistoryCheck:
    """One investigation's history check: a `SelectionCheck` that reads each target once."""

    history: RemediationHistory
    # Whether messages name remediation ids: an entry does not say which caller
    # reported it, so an authenticated caller (a tenant of its own) is shown none.
    ids_shown: bool = True
    windows: Windows = field(default_factory=Windows)
    notes: list[str] = field(default_factory=list)  # warnings for the result
    _read: dict[tuple[str, str], HistoryContext | None] = field(default_factory=dict)

    def targets(self, incident: Incident, observed: Observed) -> list[TargetResource]:
        """The incident's resource, then the owners this investigation read it has."""
        signal = incident.signal
        if not (signal.resource_kind and signal.resource_name):
            return []
        found = [TargetResource(signal.namespace, signal.resource_kind, signal.resource_name)]
        for ref in observed.owners_of(signal.resource_kind, signal.namespace, signal.resource_name):
            owner = _ref_target(ref)
            if owner is not None and owner not in found:
                found.append(owner)
        return found[:_MAX_TARGETS]

    async def context_of(self, target: TargetResource, observed: Observed) -> HistoryContext | None:
        """The target's history (read once per spec hash); None when unavailable."""
        current = observed.spec_hash_of(target.kind, target.namespace, target.name)
        key = (target_key(target), current)
        if key in self._read:
            return self._read[key]
        found: HistoryContext | None = None
        try:
            async with asyncio.timeout(request_timeout(READ_TIMEOUT)):
                found = await self.history.context(target, current, self.windows)
        except (HistoryUnavailableError, TimeoutError) as exc:
            note = (
                f"The remediation history of {key[0]} could not be read"
                f" ({str(exc)[:120] or type(exc).__name__}); the decision did not consider it."
            )
            if note not in self.notes:
                self.notes.append(note)
        self._read[key] = found
        return found

    async def __call__(self, candidate: Candidate) -> Veto | None:
        if candidate.workflow.read_only:
            return None
        signal_type = candidate.incident.signal.signal_type
        for target in self.targets(candidate.incident, candidate.observed):
            context = await self.context_of(target, candidate.observed)
            if context is None:
                continue
            veto = history_veto(
                context,
                candidate.workflow_id,
                signal_type,
                candidate.workflow.action_type,
                self.ids_shown,
            )
            if veto is not None:
                return veto
        return None


async def stood_down_because(
    check: HistoryCheck,
    incident: Incident,
    observed: Observed,
    result: AnalysisResult,
    returned: dict[str, SearchHit],
) -> Veto | None:
    """When the decider selected nothing and named catalog alternatives, the history
    veto of the first one it refuses (the decider read the same history and stood
    down for it); None otherwise. Never raises for a spent budget."""
    if result.selected_workflow is not None or result.human_review_reason not in _STOOD_DOWN:
        return None
    for alternative in result.alternative_workflows[:_ALTERNATIVES_CHECKED]:
        hit = returned.get(alternative.workflow_id)
        if hit is None:
            continue
        candidate = Candidate(incident, observed, hit, hit.workflow_id, hit, {})
        try:
            veto = await check(candidate)
        except BudgetExhaustedError:
            return None
        if veto is not None:
            return veto
    return None
