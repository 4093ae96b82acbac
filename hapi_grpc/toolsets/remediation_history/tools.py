"""The `remediation_history` tool: what was done to a target before.

Design notes: docs/internals.md (`toolsets/remediation_history/tools.py`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from hapi_grpc.domain.errors import HistoryUnavailableError
from hapi_grpc.domain.history import HistoryContext, HistoryEntry, RemediationHistory, Windows
from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.recovery.failures import classify
from hapi_grpc.domain.result import TargetResource, ToolCallStatus
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.tool import (
    FailureAnswers,
    ToolArgs,
    ToolContext,
    ToolResult,
    refused,
    unavailable,
)
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.toolsets.namespaces import ANYWHERE, NamespaceBound, ScopeRefusal
from hapi_grpc.toolsets.remediation_history import HISTORY_TOOL, RemediationHistoryToolset

__all__ = ["HISTORY_TOOL", "GetRemediationHistoryArgs", "RemediationHistorySource"]

_MAX_WINDOW_HOURS = 24 * 7  # tier 1 look-back the model may ask for
_PARAMETERS_CHARS = 400
_TEXT = 200
_guarded = FailureAnswers(
    (HistoryUnavailableError,),
    lambda exc: unavailable("the remediation history is", str(exc)[:_TEXT]),
)


class GetRemediationHistoryArgs(ToolArgs):
    """Arguments of `get_remediation_history`."""

    kind: str = Field(
        pattern=r"^[A-Z][A-Za-z0-9]{0,62}$", description="Kind of the remediation target"
    )
    namespace: str = Field(
        default="",
        pattern=r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$",
        description="Its namespace (empty for a cluster-scoped target)",
    )
    name: str = Field(pattern=r"^[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$", description="Its name")
    window_hours: int | None = Field(
        default=None,
        ge=1,
        le=_MAX_WINDOW_HOURS,
        description="Look back this many hours in detail (default 24)",
    )


def _clipped_parameters(parameters: dict[str, Any]) -> Any:
    text = json.dumps(parameters, sort_keys=True, default=str)
    return parameters if len(text) <= _PARAMETERS_CHARS else text[:_PARAMETERS_CHARS] + "…"


def entry_view(entry: HistoryEntry, now: float) -> dict[str, Any]:
    """One entry as the model sees it (absent facts left out)."""
    view: dict[str, Any] = {
        "remediation_id": entry.remediation_uid[:_TEXT],
        "attempt": entry.attempt,
        "completed_at": datetime.fromtimestamp(entry.completed_at, UTC).isoformat("T", "seconds"),
        "age_minutes": max(int((now - entry.completed_at) // 60), 0),
        "outcome": entry.outcome.value,
        "workflow_id": entry.workflow_id,
        "action_type": entry.action_type,
        "workflow_version": entry.workflow_version[:64] or None,
        "parameters": _clipped_parameters(entry.parameters) if entry.parameters else None,
        "signal_type": entry.signal_type[:_TEXT] or None,
        "automated": entry.automated,
        "confidence": entry.confidence,
        "signal_resolved": entry.signal_resolved,
        "effectiveness_score": entry.effectiveness_score,
        "spec_now_matches": None if entry.hash_match.value == "none" else entry.hash_match.value,
    }
    if entry.failure_reason:
        view["failure_reason"] = entry.failure_reason[:64]
        view["failure_class"] = classify(entry.failure_reason).label
    return {k: v for k, v in view.items() if v is not None}


def history_payload(context: HistoryContext, max_entries: int, now: float) -> dict[str, Any]:
    """The answer: the newest `max_entries` of each tier, the rest counted."""
    tier1 = context.tier1[-max_entries:]
    tier2 = context.tier2[-max(max_entries // 2, 1) :]
    payload: dict[str, Any] = {
        "target": context.target_resource,
        "current_spec_hash": context.current_spec_hash
        or "unknown (the target was not read in this investigation: no spec comparison)",
        "regression_detected": context.regression_detected,
        "window_hours": round(context.tier1_window / 3600, 1),
        "recent": [entry_view(e, now) for e in reversed(tier1)],
    }
    if len(context.tier1) > len(tier1):
        payload["recent_omitted"] = len(context.tier1) - len(tier1)
    if tier2:
        payload["older_with_same_spec"] = [entry_view(e, now) for e in reversed(tier2)]
    if len(context.tier2) > len(tier2):
        payload["older_omitted"] = len(context.tier2) - len(tier2)
    if not context.tier1 and not context.tier2:
        payload["note"] = "no remediation of this target is recorded in the window"
    return payload


@dataclass(frozen=True)
class GetRemediationHistory:
    reader: RemediationHistory
    max_entries: int
    namespaces: NamespaceBound = ANYWHERE
    ids_shown: bool = True  # remediation ids in the answer (not to an authenticated caller)
    name: str = HISTORY_TOOL
    description: str = (
        "What was done to a remediation target before: each recent remediation (newest first)"
        " with its action type and workflow (where known), parameters, outcome"
        " (Success/Failed/Escalated), failure reason and whether the signal cleared, and older"
        " ones whose spec equals the current spec. A workflow of the same action type as one"
        " that failed here is the same remediation tried again."
    )
    arguments: type[GetRemediationHistoryArgs] = GetRemediationHistoryArgs

    @_guarded
    async def run(self, args: GetRemediationHistoryArgs, ctx: ToolContext) -> ToolResult:
        if args.namespace:  # a cluster-scoped target's history is read as its object is
            try:
                self.namespaces.check(args.namespace)
            except ScopeRefusal as refusal:
                return refused(refusal.message)
        target = TargetResource(namespace=args.namespace, kind=args.kind, name=args.name)
        observed = ctx.observed
        current = observed.spec_hash_of(args.kind, args.namespace, args.name) if observed else ""
        windows = Windows()
        if args.window_hours is not None:
            windows = Windows(tier1=args.window_hours * 3600.0, tier2=windows.tier2)
        context = await self.reader.context(target, current, windows)
        payload = history_payload(context, self.max_entries, time.time())
        if not self.ids_shown or (not args.namespace and self.namespaces.only is not None):
            # An entry does not say which caller reported it: an authenticated caller
            # (a tenant of its own), or one confined to a namespace reading a
            # cluster-scoped target, reads what was done, not under which ids.
            for key in ("recent", "older_with_same_spec"):
                for view in payload.get(key, ()):
                    view.pop("remediation_id", None)
        return ToolResult(ToolCallStatus.SUCCESS, {RemediationHistoryToolset.data_key: payload})


@dataclass(frozen=True)
class RemediationHistorySource:
    """Makes each investigation's `remediation_history` toolset."""

    reader: RemediationHistory
    limits: ToolsetLimits
    max_entries: int
    namespaces: NamespaceBound = ANYWHERE  # the operator's lists

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        # A caller confined to its namespace reads no other namespace's history:
        # its remediation ids, workflows and outcomes are another tenant's.
        tool = GetRemediationHistory(
            recorder.reading(self.reader),
            self.max_entries,
            self.namespaces.confined_to(caller.namespace),
            ids_shown=not caller.name,
        )
        return RemediationHistoryToolset.toolset((tool,), self.limits)
