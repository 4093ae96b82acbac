"""`RemediationHistory` read from Data Storage, recorded here.

Design notes: docs/internals.md (`adapters/history/datastorage.py`).
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from hapi_grpc.adapters.datastorage.bodies import ContextBody
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.domain.history import RemediationRecord, Windows, build_context, target_key
from hapi_grpc.domain.tenancy import Tenant

if TYPE_CHECKING:
    from hapi_grpc.domain.history import Decision, HistoryContext, OutcomeAck, OutcomeReport
    from hapi_grpc.domain.result import TargetResource

__all__ = ["DataStorageHistory"]

MAX_CACHE_ENTRIES = 1024
MAX_CACHE_BYTES = 8 * 1024 * 1024
# A parsed answer takes about 3.3 times its JSON in memory (measured with
# tracemalloc on a 200-entry chain); counted as 4 times, plus its key's slot.
_PARSED_FACTOR = 4
_ENTRY_OVERHEAD = 512


class DataStorageHistory:
    """History from Data Storage through `client`, with `local` for what it cannot
    hold; `close()` closes both."""

    def __init__(
        self,
        client: DataStorageClient,
        local: EmbeddedHistory,
        *,
        cache_ttl: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self._local = local
        self._cache_ttl = min(cache_ttl, 60.0)
        # key -> (expires, answer, bytes), the oldest first
        self._cache: OrderedDict[str, tuple[float, ContextBody, int]] = OrderedDict()
        self._cache_bytes = 0
        self._clock = clock

    # -- the port ---------------------------------------------------------------

    async def context(
        self, target: TargetResource, current_spec_hash: str, windows: Windows = Windows()
    ) -> HistoryContext:
        key = target_key(target)
        body = await self._cached(
            f"{key}\x00{current_spec_hash}\x00{windows.tier1}\x00{windows.tier2}",
            lambda: self.client.history_context(target, current_spec_hash, windows),
        )
        remote = body.entries()
        held = {e.remediation_uid for e in remote}
        local = await self._local.context(target, current_spec_hash, windows)
        mine = [e for e in (*local.tier1, *local.tier2) if e.remediation_uid not in held]
        merged = build_context(key, current_spec_hash, [*remote, *mine], windows, self._clock())
        if body.regression_detected and not merged.regression_detected:
            merged = dataclasses.replace(merged, regression_detected=True)
        return merged

    async def by_remediation_id(
        self, remediation_id: str, tenant: Tenant = Tenant()
    ) -> RemediationRecord:
        record = await self._local.by_remediation_id(remediation_id, tenant)
        body = await self.client.effectiveness(remediation_id)
        if body is None:
            return record
        return RemediationRecord(
            record.remediation_id, record.decision, record.outcomes, body.effectiveness()
        )

    async def record_decision(self, decision: Decision) -> None:
        await self._local.record_decision(decision)

    async def record_outcome(self, report: OutcomeReport) -> OutcomeAck:
        ack = await self._local.record_outcome(report)
        # Only this target's answers are refreshed: Data Storage may now hold the
        # remediation too, and the other targets' answers have not changed.
        prefix = f"{target_key(report.target)}\x00"
        for key in [k for k in self._cache if k.startswith(prefix)]:
            self._cache_bytes -= self._cache.pop(key)[2]
        return ack

    async def close(self) -> None:
        await self.client.close()
        await self._local.close()

    # -- internals ----------------------------------------------------------------

    async def _cached(self, key: str, fetch: Callable[[], Awaitable[ContextBody]]) -> ContextBody:
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and now < hit[0]:
            return hit[1]
        body = await fetch()
        if self._cache_ttl > 0:
            if key in self._cache:
                self._cache_bytes -= self._cache.pop(key)[2]
            cost = _PARSED_FACTOR * len(body.model_dump_json()) + len(key) + _ENTRY_OVERHEAD
            self._cache[key] = (now + self._cache_ttl, body, cost)
            self._cache_bytes += cost
            while len(self._cache) > MAX_CACHE_ENTRIES or self._cache_bytes > MAX_CACHE_BYTES:
                self._cache_bytes -= self._cache.popitem(last=False)[1][2]
        return body
