"""Idempotent investigations: one per remediation id and incident, shared and kept.

A controller retries `AnalyzeIncident` for the same `remediation_id` after a
timeout, a crash or a leader change. `IdempotencyCoordinator.run` makes those
retries free:

- Calls with the same id and the same incident (`incident_fingerprint`) join
  the investigation in flight on this replica (single flight). Each caller
  waits within its own deadline; one that leaves does not stop it for the
  others, and the last one to leave cancels it.
- A finished result is kept in a `ResultStore` for `result_ttl` seconds, as
  bytes (each caller decodes its own copy), and returned again for the same
  id and fingerprint. A different incident under the same id is an
  `IncidentConflictError`, unless the call forces a fresh analysis.
- With a shared store, a lock per id (a `LockToken`, expiring after `lock_ttl`,
  renewed while the investigation runs, released when it ends) keeps other
  replicas from starting the same investigation: they poll for its result
  and take over once the lock is gone, so a dead replica blocks an id for at
  most `lock_ttl`.

The store is an optimisation, never a dependency: when it fails, calls run
their own investigation. Results that a retry could improve (budget ran
out, a dependency was unavailable) are returned to every waiter but not kept.
"""

from __future__ import annotations

from hapi_grpc.domain.fingerprint import incident_fingerprint
from hapi_grpc.domain.idempotency.coordinator import IdempotencyCoordinator
from hapi_grpc.domain.idempotency.flight import Investigate, Listener
from hapi_grpc.domain.idempotency.outcome import (
    REUSE_KINDS,
    Finished,
    LockToken,
    Outcome,
    ReuseKind,
)
from hapi_grpc.domain.result_store_port import ResultStore, StoredResult, worth_keeping

__all__ = [
    "REUSE_KINDS",
    "Finished",
    "IdempotencyCoordinator",
    "Investigate",
    "Listener",
    "LockToken",
    "Outcome",
    "ResultStore",
    "ReuseKind",
    "StoredResult",
    "incident_fingerprint",
    "worth_keeping",
]
