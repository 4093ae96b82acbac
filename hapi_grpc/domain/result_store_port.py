"""The result store port: where finished investigations and per-id locks are kept.

`StoredResult` is a finished investigation as kept (fingerprint, completion
time, encoded result); `ResultStore` is what a backend (this process, or
redis shared by every replica) implements (`application.idempotency` uses it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["ResultStore", "StoredResult"]


@dataclass(frozen=True, slots=True)
class StoredResult:
    """A finished investigation as kept: the incident's fingerprint and the encoded result."""

    fingerprint: str
    completed_at: float  # seconds since the epoch
    payload: bytes


class ResultStore(Protocol):
    """Where results and per-id locks live: this process, or shared by every replica.

    Locks hold a `holder` string; `acquire` answers None when it took the lock,
    else the current holder. Every method may raise on backend failure.
    `shared` says whether other replicas see the same results and locks; the
    locks of a store only this process sees are never taken (single flight
    within the process already does their work).
    """

    shared: bool

    async def get(self, remediation_id: str) -> StoredResult | None: ...

    async def put(self, remediation_id: str, result: StoredResult, ttl: float) -> None: ...

    async def acquire(self, remediation_id: str, holder: str, ttl: float) -> str | None: ...

    async def renew(self, remediation_id: str, holder: str, ttl: float) -> bool: ...

    async def release(self, remediation_id: str, holder: str) -> None: ...

    async def close(self) -> None: ...
