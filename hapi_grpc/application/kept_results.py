"""How finished analyses are kept: which ones, packed how, and a store that never fails.

Design notes: docs/internals.md (`application/kept_results.py`).
"""

from __future__ import annotations

import io
import logging
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf import proto
from google.protobuf.message import Message

from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason
from hapi_grpc.domain.result_store_port import ResultStore, StoredResult

__all__ = ["LockToken", "TolerantStore", "pack", "unpack", "worth_keeping"]

log = logging.getLogger("hapi_grpc.application.idempotency")

M = TypeVar("M", bound=Message)

# Review reasons a retry may not get again: keeping them would hand a retry
# with a longer deadline, or after the outage, the same partial answer.
_TRANSIENT = frozenset(
    {
        HumanReviewReason.BUDGET_EXHAUSTED,
        HumanReviewReason.LLM_UNAVAILABLE,
        HumanReviewReason.DATA_STORAGE_UNAVAILABLE,
    }
)


def worth_keeping(result: AnalysisResult) -> bool:
    """False for results a retry could improve on (budget, unavailable dependency)."""
    return result.human_review_reason not in _TRANSIENT


def pack(result: Message, events: Iterable[Message]) -> bytes:
    """The result, then the events, as length-prefixed messages (the protobuf
    convention for a sequence), compressed.

    The result comes first so that a caller that replays nothing decodes only
    it. A result is kept for `HAPI_RESULT_TTL_SECONDS`, a thousand of them
    after an alert storm: tool results are JSON text, which zlib's fastest
    level shrinks to about a third for tens of microseconds.
    """
    out = io.BytesIO()
    proto.serialize_length_prefixed(result, out)
    for event in events:
        proto.serialize_length_prefixed(event, out)
    return zlib.compress(out.getvalue(), 1)


def unpack(message: type[M], payload: bytes, *, with_events: bool) -> tuple[M, list[M]]:
    """The result of a `pack`ed payload and, when asked, its events in order."""
    data = zlib.decompress(payload)
    stream = io.BytesIO(data)
    result = proto.parse_length_prefixed(message, stream)
    events = []
    while with_events and stream.tell() < len(data):
        events.append(proto.parse_length_prefixed(message, stream))
    return result, events


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


ERROR_LOG_EVERY = 100
"""A failing store is logged once in this many failures."""


class TolerantStore:
    """`store` with every failure logged (one line in `ERROR_LOG_EVERY`) and
    answered as if nothing were kept and no lock held."""

    __slots__ = ("_errors", "store")

    def __init__(self, store: ResultStore) -> None:
        self.store = store
        self._errors = 0

    async def lookup(self, remediation_id: str) -> StoredResult | None:
        try:
            return await self.store.get(remediation_id)
        except Exception as exc:
            self._degraded("lookup", exc)
            return None

    async def save(self, remediation_id: str, result: StoredResult, ttl: float) -> None:
        try:
            await self.store.put(remediation_id, result, ttl)
        except Exception as exc:
            self._degraded("store", exc)

    async def acquire(self, remediation_id: str, token: LockToken, ttl: float) -> LockToken | None:
        """None when this token now holds the lock, else the current holder."""
        try:
            current = await self.store.acquire(remediation_id, token.text, ttl)
        except Exception as exc:
            self._degraded("lock", exc)
            return None  # run without the lock rather than not at all
        return None if current is None else LockToken.parse(current)

    async def renew(self, remediation_id: str, token: LockToken, ttl: float) -> bool:
        """False only when the lock is known lost; a failing store keeps it held."""
        try:
            return await self.store.renew(remediation_id, token.text, ttl)
        except Exception as exc:
            self._degraded("lock renewal", exc)
            return True

    async def release(self, remediation_id: str, token: LockToken) -> None:
        try:
            await self.store.release(remediation_id, token.text)
        except Exception as exc:  # the lock expires on its own
            self._degraded("lock release", exc)

    def _degraded(self, op: str, exc: Exception) -> None:
        self._errors += 1
        if self._errors % ERROR_LOG_EVERY == 1:
            text = str(exc).replace("\n", " ")[:200]
            log.warning(
                "analysis result store %s failed, running without it: %s: %s "
                "(%d store errors so far)",
                op,
                type(exc).__name__,
                text,
                self._errors,
            )
