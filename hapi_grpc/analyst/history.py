"""The target's remediation history, as the analyst reads it.

Design notes: docs/internals.md (`analyst/history.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hapi_grpc.analyst.conversation import Exchange, Reads, Step
from hapi_grpc.analyst.findings import Findings
from hapi_grpc.analyst.subject import Subject
from hapi_grpc.domain.history.gate import RECURRENCE
from hapi_grpc.domain.recovery.failures import classify
from hapi_grpc.toolsets.remediation_history import HISTORY_TOOL, RemediationHistoryToolset

__all__ = ["HistoryView", "history_read"]


def history_read(reads: Reads, findings: Findings | None, subject: Subject) -> Step | None:
    """The history read, once: of the target the evidence named
    (`namespace/group/Kind/name`), else of the reported resource."""
    if HISTORY_TOOL not in reads.offered or reads.results(HISTORY_TOOL):
        return None
    parts = (findings.target if findings else "").split("/")
    kind, namespace, name = (
        (parts[-2], parts[0], parts[-1])
        if len(parts) >= 4
        else (subject.kind, subject.namespace, subject.name)
    )
    if not (kind and name):
        return None
    return HISTORY_TOOL, {"kind": kind, "namespace": namespace, "name": name}


@dataclass(frozen=True, slots=True)
class HistoryView:
    """What the history answer says (empty when it was not read or not answered)."""

    target: str = ""
    recent: tuple[dict[str, Any], ...] = ()
    regression: bool = False

    @classmethod
    def read(cls, exchanges: Sequence[Exchange]) -> HistoryView:
        for exchange in exchanges:
            data = (
                exchange.result.get(RemediationHistoryToolset.data_key)
                if exchange.name == HISTORY_TOOL
                else None
            )
            if isinstance(data, dict):
                recent = [e for e in data.get("recent") or [] if isinstance(e, dict)]
                older = [e for e in data.get("older_with_same_spec") or [] if isinstance(e, dict)]
                # An undone fix is a successful entry whose pre-remediation spec is
                # the current one (as the history check reads it), not the flag: a
                # failure that left the spec as it was matches its pre spec too.
                undone = any(
                    e.get("outcome") == "Success" and e.get("spec_now_matches") == "preRemediation"
                    for e in (*recent, *older)
                )
                return cls(str(data.get("target", "")), tuple(recent), undone)
        return cls()

    def _pattern(self, signal_type: str) -> str | None:
        """Why a state-changing remediation would repeat a pattern; None when not."""
        if self.regression:
            return f"the current spec of {self.target} is one a successful remediation replaced"
        counts: dict[str, int] = {}
        for entry in self.recent:
            same = entry.get("signal_type") in (None, signal_type) or not signal_type
            if entry.get("outcome") == "Success" and entry.get("workflow_id") and same:
                workflow = str(entry["workflow_id"])
                counts[workflow] = counts.get(workflow, 0) + 1
        for workflow, count in counts.items():
            if count >= RECURRENCE:
                return (
                    f"{workflow} already succeeded {count} times on {self.target} in the window"
                    " and the signal is back: a recurring cause for a human, not another run"
                )
        return None

    def objection(self, hit: dict[str, Any], signal_type: str) -> str | None:
        """Why `hit` is not selected, given the target's history; None when it may be."""
        if hit.get("read_only") is True:
            return None
        workflow = str(hit.get("workflow_id", ""))
        action_type = str(hit.get("action_type") or "")
        for entry in self.recent:  # newest first
            reason = str(entry.get("failure_reason", ""))
            same = entry.get("workflow_id") == workflow or (
                bool(action_type) and entry.get("action_type") == action_type
            )
            failed = entry.get("outcome") == "Failed" and same
            if failed and not classify(reason).repeat_allowed:
                return (
                    f"{workflow} failed on {self.target} {entry.get('age_minutes', '?')} minutes"
                    f" ago ({reason or 'no reason given'}); it is not run again"
                )
        return self._pattern(signal_type)
