"""Where the embedded history keeps its records, and the rules that bound it.

Design notes: docs/internals.md (`adapters/history/backends.py`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Protocol

from hapi_grpc.domain.history import Decision, HashMatch, HistoryEntry, Outcome
from hapi_grpc.domain.result import TargetResource

__all__ = [
    "DECISION_OVERHEAD",
    "MAX_ATTEMPTS",
    "RECORD_OVERHEAD",
    "HistoryBackend",
    "Limits",
    "OutcomeRecord",
    "decision_cost",
    "decode_decision",
    "decode_entry",
    "encode_decision",
    "encode_entry",
]

MAX_ATTEMPTS = 100  # the request's `attempt` bound
MIB = 1024 * 1024

# Bytes this process spends per record besides its encoded text: the record
# object, its key and lane strings, and its entries in the indexes (measured
# with tracemalloc in tests/adapters/history/test_history_bounds.py).
RECORD_OVERHEAD = 1536
DECISION_OVERHEAD = 768


@dataclass(frozen=True, slots=True)
class Limits:
    ttl: float = 90 * 86_400.0
    max_per_target: int = 100  # per lane: per target, reporting caller and kind
    max_total: int = 100_000  # outcomes in all, and decisions in all
    max_bytes: int = 32 * MIB  # outcomes in all
    max_decision_bytes: int = 8 * MIB  # decisions in all


@dataclass(frozen=True, slots=True)
class OutcomeRecord:
    """One outcome as a backend keeps it."""

    key: str  # the remediation id within its tenant (`Tenant.key`)
    attempt: int
    target: str  # `target_key` of the remediated resource
    tenant: str  # `Tenant.scope`: the unit of the global bound
    failed: bool  # failures have lanes of their own
    recorded_at: float  # the server's clock: the order of eviction
    data: str  # the encoded entry (ASCII JSON)

    @property
    def lane(self) -> str:
        """`<target>#<tenant>#f|o` ('#' is in neither a target nor a scope)."""
        return f"{self.target}#{self.tenant}#{'f' if self.failed else 'o'}"

    @property
    def cost(self) -> int:
        return len(self.data.encode()) + len(self.key) + len(self.lane) + RECORD_OVERHEAD


def decision_cost(key: str, data: str) -> int:
    return len(data.encode()) + len(key) + DECISION_OVERHEAD


class HistoryBackend(Protocol):
    """Raw records by key; every method may raise on backend failure."""

    async def put_decision(self, key: str, data: str) -> None: ...

    async def get_decision(self, key: str) -> str | None: ...

    async def add_outcome(self, record: OutcomeRecord) -> str | None:
        """Keep `record` unless its key holds one: then that one, unchanged."""
        ...

    async def outcomes_of(self, key: str) -> list[str]:
        """Every attempt's outcome of the remediation `key` (`Tenant.key`)."""
        ...

    async def outcomes_of_target(self, target: str, since: float) -> list[str]:
        """The target's outcomes recorded at or after `since` (a superset of
        those that completed since then: none completes after it is recorded)."""
        ...

    async def close(self) -> None: ...


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
