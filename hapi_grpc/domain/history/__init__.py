"""Remediation history: what was done to a target before, and did it work.

Design notes: docs/internals.md (`domain/history/__init__.py`).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from hapi_grpc.domain.execution import ExecutedWorkflow, ExecutionFailure
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.domain.spec_hash import spec_hash
from hapi_grpc.domain.tenancy import Tenant

__all__ = [
    "Decision",
    "Effectiveness",
    "HashMatch",
    "HistoryContext",
    "HistoryEntry",
    "Outcome",
    "OutcomeAck",
    "OutcomeReport",
    "RemediationHistory",
    "RemediationRecord",
    "Windows",
    "build_context",
    "hash_match",
    "spec_hash",
    "target_key",
]

DAY = 86_400.0


class Outcome(enum.StrEnum):
    """How a remediation ended, in the contract's words."""

    SUCCESS = "Success"
    FAILED = "Failed"
    ESCALATED = "Escalated"  # a human declined: nothing was executed


class HashMatch(enum.StrEnum):
    """How the current spec compares with an entry's pre/post-remediation spec."""

    PRE = "preRemediation"
    POST = "postRemediation"
    NONE = "none"


def target_key(target: TargetResource) -> str:
    """`{namespace}/{kind}/{name}`, the contract's `targetResource`."""
    return f"{target.namespace}/{target.kind}/{target.name}"


@dataclass(frozen=True, slots=True)
class Windows:
    """Look-back of the detailed (tier 1) and summary (tier 2) chains, in seconds."""

    tier1: float = DAY
    tier2: float = 90 * DAY


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision this service returned for a remediation id."""

    remediation_id: str
    target: TargetResource
    signal_type: str
    signal_fingerprint: str  # the incident id, when the caller sent one
    workflow_id: str | None  # None: no workflow was selected
    workflow_version: str
    confidence: float | None
    automated: bool  # False: the decision asked for human review
    decided_at: float  # seconds since the epoch
    recovery_attempt: int = 0  # the recovery request's attempt_number; 0: not a recovery
    action_type: str = ""  # the selected workflow's action type; "" when unknown
    caller: str = ""  # the authenticated caller that asked; "" without authentication

    @property
    def tenant(self) -> Tenant:
        """Whose decision it is: the target's namespace and the caller."""
        return Tenant(self.target.namespace, self.caller)


@dataclass(frozen=True, slots=True)
class OutcomeReport:
    """What a controller reported for one attempt of a remediation."""

    remediation_id: str
    attempt: int
    target: TargetResource
    outcome: Outcome
    executed: ExecutedWorkflow | None  # None when a human declined
    failure: ExecutionFailure | None = None  # set when the outcome is FAILED
    declined_reason: str = ""
    signal_cleared: bool | None = None
    completed_at: float | None = None  # seconds since the epoch; None: when it arrives
    pre_spec_hash: str = ""
    post_spec_hash: str = ""
    caller: str = ""  # the authenticated caller that reported; "" without authentication
    # The executed workflow's action type, as the catalog gives it (not part of
    # what was reported: a retry of the report is the same report).
    action_type: str = ""

    @property
    def workflow_id(self) -> str | None:
        return self.executed.workflow_id if self.executed else None

    @property
    def tenant(self) -> Tenant:
        """Whose report it is: the target's namespace and the caller."""
        return Tenant(self.target.namespace, self.caller)

    def fingerprint(self) -> str:
        """Digest of what is kept of the report: a retry carries the same one."""
        executed, failure = self.executed, self.failure
        kept = {
            "remediation_id": self.remediation_id,
            "attempt": self.attempt,
            "target": asdict(self.target),
            "outcome": self.outcome.value,
            "workflow_id": self.workflow_id,
            "workflow_version": executed.version if executed else "",
            "parameters": executed.parameters if executed else {},
            "failure_reason": failure.reason if failure else "",
            "failure_message": failure.message if failure else "",
            "declined_reason": self.declined_reason,
            "signal_cleared": self.signal_cleared,
            "completed_at": self.completed_at,
            "pre_spec_hash": self.pre_spec_hash,
            "post_spec_hash": self.post_spec_hash,
        }
        text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One completed remediation of a target (a tier 1 chain entry)."""

    remediation_uid: str
    completed_at: float  # seconds since the epoch
    outcome: Outcome
    attempt: int = 1
    signal_type: str = ""
    signal_fingerprint: str = ""
    # What ran: the workflow's action type from the taxonomy (Data Storage's
    # `actionType`) and its id where the record has one (this service's own
    # records); both None when escalated, or when not known.
    action_type: str | None = None
    workflow_id: str | None = None
    workflow_version: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    confidence: float | None = None  # of the decision, when known
    automated: bool | None = None  # None: the decision is not known
    signal_resolved: bool | None = None
    effectiveness_score: float | None = None  # None until assessed
    hash_match: HashMatch = HashMatch.NONE
    pre_spec_hash: str = ""
    post_spec_hash: str = ""
    failure_reason: str = ""
    assessment_reason: str = ""

    def same_remediation(self, workflow_id: str, action_type: str) -> bool:
        """Whether this entry ran the remediation of workflow `workflow_id` of type
        `action_type`: the same workflow where the entry names one, else (or also)
        the same action type where both are known."""
        if self.workflow_id and self.workflow_id == workflow_id:
            return True
        return bool(self.action_type and action_type and self.action_type == action_type)


@dataclass(frozen=True, slots=True)
class HistoryContext:
    """What was done to a target before and whether it worked, oldest first."""

    target_resource: str
    current_spec_hash: str
    regression_detected: bool
    tier1_window: float
    tier1: tuple[HistoryEntry, ...]
    tier2_window: float
    tier2: tuple[HistoryEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class Effectiveness:
    """Data Storage's assessment of one remediation (absent from the embedded store)."""

    score: float | None
    assessment_status: str
    pre_spec_hash: str = ""
    post_spec_hash: str = ""
    hash_match: str = ""


@dataclass(frozen=True, slots=True)
class RemediationRecord:
    """Everything known of one remediation id."""

    remediation_id: str
    decision: Decision | None
    outcomes: tuple[HistoryEntry, ...]  # by attempt
    effectiveness: Effectiveness | None = None


@dataclass(frozen=True, slots=True)
class OutcomeAck:
    """The acknowledgement stored for a report (returned again for its retries)."""

    recorded_at: float
    decision_known: bool
    already_recorded: bool = False
    confidence: float | None = None  # of the decision, when known
    automated: bool | None = None  # whether the decision was automated, when known


def hash_match(entry: HistoryEntry, current: str) -> HashMatch:
    """How `current` compares with the spec after, then before, `entry`; an
    entry without either hash keeps the comparison its source made (Data
    Storage compares with the current hash of the same query)."""
    if not current:
        return HashMatch.NONE
    if not (entry.pre_spec_hash or entry.post_spec_hash):
        return entry.hash_match
    if entry.post_spec_hash == current:
        return HashMatch.POST
    if entry.pre_spec_hash == current:
        return HashMatch.PRE
    return HashMatch.NONE


def build_context(
    target_resource: str,
    current_spec_hash: str,
    entries: Iterable[HistoryEntry],
    windows: Windows,
    now: float,
) -> HistoryContext:
    """Tier 1: every entry inside `windows.tier1`; tier 2: older ones inside
    `windows.tier2` whose spec matches the current one (a configuration
    regression). `regression_detected`: some entry's pre-remediation spec is
    the current spec (the fix was undone)."""
    tier1: list[HistoryEntry] = []
    tier2: list[HistoryEntry] = []
    regression = False
    for entry in sorted(entries, key=lambda e: (e.completed_at, e.attempt)):
        age = now - entry.completed_at
        if age > windows.tier2:
            continue
        match = hash_match(entry, current_spec_hash)
        entry = dataclasses.replace(entry, hash_match=match)
        if match is HashMatch.PRE:
            regression = True
        if age <= windows.tier1:
            tier1.append(entry)
        elif match is not HashMatch.NONE:
            tier2.append(entry)
    return HistoryContext(
        target_resource=target_resource,
        current_spec_hash=current_spec_hash,
        regression_detected=regression,
        tier1_window=windows.tier1,
        tier1=tuple(tier1),
        tier2_window=windows.tier2,
        tier2=tuple(tier2),
    )


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
