"""History records as the JSON kept in memory or Redis (and in an export file)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hapi_grpc.domain.history import Decision, HashMatch, HistoryEntry, Outcome
from hapi_grpc.domain.result import TargetResource

__all__ = ["decode_decision", "decode_entry", "encode_decision", "encode_entry"]

# Bump when the shape changes, so replicas of another version ignore a record.
VERSION = 1


def encode_decision(decision: Decision) -> str:
    return json.dumps({"v": VERSION, **dataclasses.asdict(decision)}, separators=(",", ":"))


def decode_decision(text: str | bytes | None) -> Decision | None:
    data = _load(text)
    if data is None:
        return None
    try:
        return Decision(
            remediation_id=str(data["remediation_id"]),
            target=TargetResource(**data["target"]),
            signal_type=str(data["signal_type"]),
            signal_fingerprint=str(data["signal_fingerprint"]),
            workflow_id=data["workflow_id"],
            workflow_version=str(data["workflow_version"]),
            confidence=data["confidence"],
            automated=bool(data["automated"]),
            decided_at=float(data["decided_at"]),
            recovery_attempt=int(data.get("recovery_attempt", 0)),  # absent before it was kept
            caller=str(data.get("caller", "")),
            action_type=str(data.get("action_type") or ""),  # absent before it was kept
        )
    except (KeyError, TypeError, ValueError):
        return None  # another version's record: treated as absent


def encode_entry(entry: HistoryEntry, **extra: Any) -> str:
    """The entry with `extra` keys beside it (the report's fingerprint, the ack)."""
    return json.dumps(
        {"v": VERSION, "entry": dataclasses.asdict(entry), **extra}, separators=(",", ":")
    )


def decode_entry(text: str | bytes | None) -> tuple[HistoryEntry, dict[str, Any]] | None:
    """The entry and the extra keys stored with it; None for another version's record."""
    data = _load(text)
    if data is None:
        return None
    try:
        fields = dict(data.pop("entry"))
        if "workflow_id" not in fields:
            # Kept before entries had both: its `action_type` held the workflow id.
            fields["workflow_id"] = fields.pop("action_type", None)
        fields["outcome"] = Outcome(fields["outcome"])
        fields["hash_match"] = HashMatch(fields.get("hash_match", "none"))
        return HistoryEntry(**fields), data
    except (KeyError, TypeError, ValueError):
        return None


def _load(text: str | bytes | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("v") != VERSION:
        return None
    return data
