"""What the coordinator hands out and keeps: results, how they were obtained, lock tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "REUSE_KINDS",
    "Finished",
    "FlightResult",
    "LockToken",
    "Outcome",
    "ReuseKind",
    "conflict_message",
]

# How a call got its result without running an investigation of its own.
ReuseKind = Literal["joined", "awaited", "stored"]
REUSE_KINDS: tuple[ReuseKind, ...] = ("joined", "awaited", "stored")


@dataclass(frozen=True, slots=True)
class Finished:
    """What an investigation hands the coordinator: the encoded result and whether to keep it."""

    payload: bytes
    keep: bool = True


@dataclass(frozen=True, slots=True)
class Outcome:
    """One call's answer: its own copy of the encoded result and how it was obtained."""

    payload: bytes
    completed_at: float  # seconds since the epoch
    reused: ReuseKind | None  # None: this call ran the investigation
    # True when the investigation ran on this replica, so `on_event` saw its
    # events; False when the result came from the store or another replica.
    live: bool = True


@dataclass(frozen=True, slots=True)
class FlightResult:
    """How an investigation in flight on this replica ended for its callers."""

    payload: bytes
    completed_at: float  # seconds since the epoch
    # None: this flight ran the investigation; else where it found the result
    # ("stored" before it started, "awaited" from another replica's run).
    origin: ReuseKind | None


@dataclass(frozen=True, slots=True)
class LockToken:
    """The holder of a remediation id's lock in a shared store.

    Kept in the store as the text `<lead>/<fingerprint>`: `lead` is unique per
    investigation across replicas, and `fingerprint` lets a replica that finds
    the lock taken tell whether its holder analyses the same incident.
    """

    lead: str
    fingerprint: str

    @property
    def text(self) -> str:
        """The token as the store keeps it."""
        return f"{self.lead}/{self.fingerprint}"

    @classmethod
    def parse(cls, text: str) -> LockToken:
        """The token a store returned as the current holder (a lead holds no '/')."""
        lead, _, fingerprint = text.partition("/")
        return cls(lead, fingerprint)


def conflict_message(remediation_id: str, state: str) -> str:
    """The error text for a different incident under `remediation_id`."""
    remedy = (
        "set force_reanalysis to analyse this incident instead"
        if state == "was analysed"
        else "retry once that analysis has finished"
    )
    return (
        f"remediation_id {remediation_id!r} {state} for a different incident; "
        f"resend the same incident to get its result, use a new remediation_id, or {remedy}"
    )
