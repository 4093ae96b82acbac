"""`RemediationHistory` read from Data Storage, recorded here.

Reads speak the Data Storage contract (`GET /api/v1/remediation-history/context`,
`GET /api/v1/effectiveness/{id}`) with the catalog client's rules: the shared
retry policy (`datastorage_retry_policy`: 5xx, 429, timeouts and dropped
connections retried with backoff; each attempt's timeouts clipped to the
caller's budget), a circuit breaker of its own, and answers reused for a
few seconds at most (`cache_ttl`, never long: history changes with every
outcome). The contract has no write endpoint: decisions and reported
outcomes are kept in the embedded history (`local`), and a context answer
adds the local entries Data Storage does not hold yet.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import quote

import aiohttp
from pydantic import BaseModel
from yarl import URL

from hapi_grpc.adapters.catalog.datastorage import datastorage_retry_policy
from hapi_grpc.adapters.catalog.datastorage_body import (
    ContractViolation,
    parse_body,
)
from hapi_grpc.adapters.catalog.datastorage_exchange import exchange, record
from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.history.datastorage_body import ContextBody, EffectivenessBody, go_duration
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.http_policy import Attempt, run_attempts
from hapi_grpc.domain.errors import CatalogUnavailableError, HistoryUnavailableError
from hapi_grpc.domain.history import (
    Decision,
    HistoryContext,
    OutcomeAck,
    OutcomeReport,
    RemediationRecord,
    Windows,
    build_context,
    target_key,
)
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.domain.sensitive import register_secret
from hapi_grpc.domain.tenancy import Tenant
from hapi_grpc.observability import metrics

__all__ = ["CONTEXT_PATH", "DataStorageHistory"]

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

CONTEXT_PATH = "/api/v1/remediation-history/context"
EFFECTIVENESS_PATH = "/api/v1/effectiveness/"
MAX_CACHE_ENTRIES = 1024
MAX_CACHE_BYTES = 8 * 1024 * 1024
# A parsed answer takes about 3.3 times its JSON in memory (measured with
# tracemalloc on a 200-entry chain); counted as 4 times, plus its key's slot.
_PARSED_FACTOR = 4
_ENTRY_OVERHEAD = 512


class DataStorageHistory:
    """History from Data Storage over HTTP, with `local` for what it cannot hold."""

    def __init__(
        self,
        base_url: str,
        local: EmbeddedHistory,
        *,
        request_timeout: float = 2.0,
        max_retries: int = 3,
        backoff_base: float = 0.1,
        backoff_max: float = 2.0,
        breaker: RateCircuitBreaker | None = None,
        cache_ttl: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        url = URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("Data Storage base_url must be an absolute http(s) URL")
        if url.password:
            register_secret(url.password)
        self._base_url = str(url).rstrip("/")
        self._local = local
        self._timeout = request_timeout
        self.policy = datastorage_retry_policy(
            request_timeout, max_retries, backoff_base, backoff_max
        )
        self._breaker = breaker or RateCircuitBreaker("datastorage-history")
        self._cache_ttl = min(cache_ttl, 60.0)
        # key -> (expires, answer, bytes), the oldest first
        self._cache: OrderedDict[str, tuple[float, ContextBody, int]] = OrderedDict()
        self._cache_bytes = 0
        self._clock = clock
        self._session: aiohttp.ClientSession | None = None

    # -- the port ---------------------------------------------------------------

    async def context(
        self, target: TargetResource, current_spec_hash: str, windows: Windows = Windows()
    ) -> HistoryContext:
        key = target_key(target)
        query = {
            "targetKind": target.kind,
            "targetName": target.name,
            "targetNamespace": target.namespace,
            "currentSpecHash": current_spec_hash,
            "tier1Window": go_duration(windows.tier1),
            "tier2Window": go_duration(windows.tier2),
        }
        body = await self._cached(
            f"{key}\x00{current_spec_hash}\x00{windows.tier1}\x00{windows.tier2}",
            lambda: self._get("history", CONTEXT_PATH, query, ContextBody),
        )
        assert body is not None  # the context endpoint never answers 404
        remote = body.entries()
        held = {e.remediation_uid for e in remote}
        local = await self._local.context(target, current_spec_hash, windows)
        mine = [e for e in (*local.tier1, *local.tier2) if e.remediation_uid not in held]
        merged = build_context(key, current_spec_hash, [*remote, *mine], windows, self._clock())
        if body.regression_detected and not merged.regression_detected:
            merged = _with_regression(merged)
        return merged

    async def by_remediation_id(
        self, remediation_id: str, tenant: Tenant = Tenant()
    ) -> RemediationRecord:
        record = await self._local.by_remediation_id(remediation_id, tenant)
        path = EFFECTIVENESS_PATH + quote(remediation_id, safe="")
        body = await self._get("effectiveness", path, None, EffectivenessBody)
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
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self._local.close()

    # -- internals ----------------------------------------------------------------

    async def _cached(
        self, key: str, fetch: Callable[[], Awaitable[ContextBody | None]]
    ) -> ContextBody | None:
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and now < hit[0]:
            return hit[1]
        body = await fetch()
        if body is not None and self._cache_ttl > 0:
            if key in self._cache:
                self._cache_bytes -= self._cache.pop(key)[2]
            cost = _PARSED_FACTOR * len(body.model_dump_json()) + len(key) + _ENTRY_OVERHEAD
            self._cache[key] = (now + self._cache_ttl, body, cost)
            self._cache_bytes += cost
            while len(self._cache) > MAX_CACHE_ENTRIES or self._cache_bytes > MAX_CACHE_BYTES:
                self._cache_bytes -= self._cache.popitem(last=False)[1][2]
        return body

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self._timeout, connect=self._timeout),
                headers={"Accept": "application/json"},
                trust_env=False,
            )
        return self._session

    async def _get(
        self, endpoint: str, path: str, query: dict[str, str] | None, model: type[M]
    ) -> M | None:
        """One logical GET through the breaker and the retry policy; None on 404."""
        url = URL(self._base_url + path, encoded=True)
        if query:
            url = url.with_query(query)
        what = f"Data Storage {endpoint} (GET {path.split('?')[0]})"

        async def send(attempt: Attempt) -> M | None:
            return await self._attempt(endpoint, url, model, attempt)

        async def call() -> M | None:
            return await run_attempts(
                self.policy,
                what,
                send,
                fail=HistoryUnavailableError,
                log=log,
                on_retry=metrics.DATASTORAGE_RETRIES.labels(endpoint=endpoint).inc,
            )

        try:
            return await self._breaker.call(call)
        except CatalogUnavailableError as exc:  # the breaker is open
            raise HistoryUnavailableError(str(exc)) from None

    async def _attempt(self, endpoint: str, url: URL, model: type[M], attempt: Attempt) -> M | None:
        reply = await exchange(self._get_session(), endpoint, "GET", url, attempt.timeout)
        if reply.ok:
            try:
                value = parse_body(reply.raw, reply.over, reply.content_type, model)
            except ContractViolation as exc:
                record(endpoint, "contract_error", reply.started)
                log.warning("Data Storage %s response breaks the contract: %s", endpoint, exc)
                raise HistoryUnavailableError(f"{endpoint} response: {exc}") from None
            record(endpoint, "2xx", reply.started)
            return value
        if reply.status == 404 and endpoint == "effectiveness":
            return None
        problem = ": ".join(part for part in reply.problem() if part)
        raise HistoryUnavailableError(
            f"Data Storage {endpoint} answered HTTP {reply.status}"
            + (f": {problem}" if problem else "")
        )


def _with_regression(context: HistoryContext) -> HistoryContext:
    return dataclasses.replace(context, regression_detected=True)
