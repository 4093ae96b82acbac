"""Result store access that never raises: a failing store degrades to none."""

from __future__ import annotations

import logging

from hapi_grpc.domain.idempotency.outcome import LockToken
from hapi_grpc.domain.result_store_port import ResultStore, StoredResult

__all__ = ["TolerantStore"]

log = logging.getLogger("hapi_grpc.domain.idempotency")


class TolerantStore:
    """`store` with every failure logged (one line in `error_log_every`) and
    answered as if nothing were kept and no lock held: the store is an
    optimisation, never a dependency."""

    __slots__ = ("_error_log_every", "_errors", "store")

    def __init__(self, store: ResultStore, error_log_every: int = 100) -> None:
        self.store = store
        self._error_log_every = max(1, error_log_every)
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
        if self._errors % self._error_log_every == 1 or self._error_log_every == 1:
            text = str(exc).replace("\n", " ")[:200]
            log.warning(
                "analysis result store %s failed, running without it: %s: %s "
                "(%d store errors so far)",
                op,
                type(exc).__name__,
                text,
                self._errors,
            )
