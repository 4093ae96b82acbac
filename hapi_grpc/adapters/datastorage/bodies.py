"""Data Storage's answers read: a JSON body into its model, RFC 7807 problems, and the
remediation history and effectiveness answers as models.

`parse_body` checks size, content type, JSON and the pydantic model and raises
`ContractViolation` with a short, redacted reason; `problem_text` reads the
title and detail of an error answer.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hapi_grpc.adapters.http.transport import Response
from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.history import Effectiveness, HashMatch, HistoryEntry, Outcome
from hapi_grpc.domain.sensitive import redact

__all__ = [
    "MAX_RESPONSE_BYTES",
    "ContextBody",
    "ContractViolation",
    "EffectivenessBody",
    "check_workflow_id",
    "clean_text",
    "go_duration",
    "parse_body",
    "problem_text",
]

M = TypeVar("M", bound=BaseModel)

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_PROBLEM_TEXT_MAX = 200
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]+")


class ContractViolation(Exception):
    """Data Storage answered 2xx with a body that breaks its contract."""


def parse_body(response: Response, model: type[M]) -> M:
    """A 2xx answer's body as `model`; ContractViolation naming what is wrong."""
    raw = response.body
    if response.over:
        raise ContractViolation(f"body is larger than {MAX_RESPONSE_BYTES} bytes")
    mime = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if mime and mime != "application/json" and not mime.endswith("+json"):
        raise ContractViolation(f"content type {clean_text(mime, 60)!r} is not JSON")
    try:
        data = bounded_json.loads(raw, max_bytes=MAX_RESPONSE_BYTES)
    except UnicodeDecodeError:
        raise ContractViolation("body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ContractViolation(f"body is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise ContractViolation(f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ContractViolation(_summarize(exc)) from None


def _summarize(exc: ValidationError, limit: int = 3) -> str:
    """'workflows.0.confidence: Input should be a valid number' (inputs left out)."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = [
        f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}"
        for err in errors[:limit]
    ]
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more problem(s)")
    return "; ".join(parts)


def check_workflow_id(value: BaseModel, workflow_id: str) -> None:
    # A schema for another workflow would validate parameters against the
    # wrong rules; treat it as a broken answer.
    answered = getattr(value, "workflow_id", workflow_id)
    if answered != workflow_id:
        raise ContractViolation(
            f"workflow_id {clean_text(str(answered), 64)!r} does not match the requested id"
        )


def problem_text(raw: bytes) -> tuple[str, str]:
    """Title and detail of an RFC 7807 body, cleaned and truncated; empty if absent."""
    try:
        data = bounded_json.loads(raw, max_bytes=MAX_RESPONSE_BYTES) if raw else None
    except ValueError:
        return "", ""
    if not isinstance(data, dict):
        return "", ""
    title, detail = data.get("title"), data.get("detail")
    return (
        clean_text(title, _PROBLEM_TEXT_MAX) if isinstance(title, str) else "",
        clean_text(detail, _PROBLEM_TEXT_MAX) if isinstance(detail, str) else "",
    )


def clean_text(text: str, limit: int) -> str:
    text = redact(_CONTROL_CHARS.sub(" ", text).strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- remediation history ------------------------------------------------------------

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
