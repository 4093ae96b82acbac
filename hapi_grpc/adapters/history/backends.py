"""Where the embedded history keeps its records, and the rules that bound it.

Two backends, this process's memory (`memory.py`) and Redis shared by every
replica (`redis_store.py`), keep the same records under the same rules, none
of which a caller can drive:

- Records expire after `ttl`.
- An outcome is written only if its key `(tenant, remediation_id, attempt)`
  is absent, atomically, so two replicas receiving the same report agree on
  which one was first, and no tenant can take another's key.
- A target's outcomes are kept in lanes, one per reporting caller and per
  kind (failures apart from successes and declines); each lane keeps its
  newest `max_per_target` by the time the server recorded them (never the
  caller's `completed_at`). A flood of declines cannot push a failure out,
  nor one caller's reports another's.
- In all at most `max_total` outcomes and `max_bytes` bytes: over either,
  the tenant (namespace and caller) holding the most bytes gives up its
  oldest record, successes and declines before failures. A tenant that
  floods the store evicts its own records, not another's.
- Decisions: at most `max_total` and `max_decision_bytes`, the oldest first
  (a decision only lends its confidence to the report that follows it).

A record's bytes are its encoded size plus `RECORD_OVERHEAD` (what this
process spends to keep and index it), so the bounds hold in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "DECISION_OVERHEAD",
    "MAX_ATTEMPTS",
    "RECORD_OVERHEAD",
    "HistoryBackend",
    "Limits",
    "OutcomeRecord",
    "decision_cost",
]

MAX_ATTEMPTS = 100  # the request's `attempt` bound
MIB = 1024 * 1024

# Bytes this process spends per record besides its encoded text: the record
# object, its key and lane strings, and its entries in the indexes (measured
# with tracemalloc in tests/outcomes/test_history_bounds.py).
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
