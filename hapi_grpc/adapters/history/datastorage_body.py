"""Data Storage's remediation history and effectiveness answers, as models."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hapi_grpc.domain.history import Effectiveness, HashMatch, HistoryEntry, Outcome

__all__ = ["ContextBody", "EffectivenessBody", "go_duration"]

MAX_CHAIN = 500  # entries read from one tier; a longer chain is cut (oldest kept first)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class EntryBody(_Model):
    remediation_uid: str = Field(alias="remediationUID", min_length=1, max_length=253)
    completed_at: datetime = Field(alias="completedAt")
    signal_fingerprint: str | None = Field(None, alias="signalFingerprint", max_length=253)
    signal_type: str | None = Field(None, alias="signalType", max_length=128)
    action_type: str | None = Field(None, alias="actionType", max_length=253)
    outcome: Literal["Success", "Failed", "Escalated"] | None = None
    effectiveness_score: float | None = Field(None, alias="effectivenessScore", ge=0, le=1)
    signal_resolved: bool | None = Field(None, alias="signalResolved")
    hash_match: Literal["preRemediation", "postRemediation", "none"] | None = Field(
        None, alias="hashMatch"
    )
    pre_spec_hash: str | None = Field(None, alias="preRemediationSpecHash", max_length=100)
    post_spec_hash: str | None = Field(None, alias="postRemediationSpecHash", max_length=100)
    assessment_reason: str | None = Field(None, alias="assessmentReason", max_length=64)

    def entry(self) -> HistoryEntry:
        outcome = Outcome(self.outcome) if self.outcome else Outcome.ESCALATED
        return HistoryEntry(
            remediation_uid=self.remediation_uid,
            completed_at=self.completed_at.timestamp(),
            outcome=outcome,
            signal_type=self.signal_type or "",
            signal_fingerprint=self.signal_fingerprint or "",
            action_type=self.action_type,
            signal_resolved=self.signal_resolved,
            effectiveness_score=self.effectiveness_score,
            hash_match=HashMatch(self.hash_match or "none"),
            pre_spec_hash=self.pre_spec_hash or "",
            post_spec_hash=self.post_spec_hash or "",
            assessment_reason=self.assessment_reason or "",
        )


class TierBody(_Model):
    window: str = ""
    chain: list[EntryBody] | None = None


class ContextBody(_Model):
    target_resource: str = Field(alias="targetResource")
    current_spec_hash: str = Field("", alias="currentSpecHash")
    regression_detected: bool = Field(False, alias="regressionDetected")
    tier1: TierBody | None = None
    tier2: TierBody | None = None

    def entries(self) -> list[HistoryEntry]:
        found: list[HistoryEntry] = []
        for tier in (self.tier1, self.tier2):
            if tier is not None and tier.chain:
                found.extend(e.entry() for e in tier.chain[:MAX_CHAIN])
        return found


class _Hashes(_Model):
    pre_remediation_spec_hash: str | None = None
    post_remediation_spec_hash: str | None = None
    hash_match: str | None = None


class EffectivenessBody(_Model):
    correlation_id: str = ""
    score: float | None = Field(None, ge=0, le=1)
    assessment_status: str = Field("", max_length=64)
    hash_comparison: _Hashes | None = None

    def effectiveness(self) -> Effectiveness:
        hashes = self.hash_comparison or _Hashes()
        return Effectiveness(
            score=self.score,
            assessment_status=self.assessment_status,
            pre_spec_hash=hashes.pre_remediation_spec_hash or "",
            post_spec_hash=hashes.post_remediation_spec_hash or "",
            hash_match=hashes.hash_match or "",
        )


def go_duration(seconds: float) -> str:
    """A Go duration for a window: whole hours as `24h`, else whole seconds."""
    whole = max(int(seconds), 1)
    return f"{whole // 3600}h" if whole % 3600 == 0 else f"{whole}s"
