"""Remediation ids between namespaces and targets, through the real grpc.aio
server without authentication (the tenant is the namespace), with the
history in memory and in a real Redis shared by two replicas."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from hapi_grpc.domain.tenancy import Tenant
from tests.application.test_report_outcome import TARGET, report
from tests.domain.policy.test_grpc import answer, request, search, servers
from tests.fakes.redis_server import running_redis
from tests.fakes.scripted_llm import ScriptedLLMServer
from tests.helpers.grpc_server import RunningServer

DECIDED = {"namespace": "payments", "kind": "Deployment", "name": "payment-api", "apiGroup": "apps"}


@pytest.fixture(params=["memory", "redis"])
def cache_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str | None]:
    if request.param == "memory":
        yield None
        return
    with running_redis(tmp_path) as redis:
        yield redis.url


@asynccontextmanager
async def deciding(cache_url: str | None) -> AsyncIterator[tuple[RunningServer, RunningServer]]:
    """Two replicas (one in memory: the same one twice) and a model that decides once."""
    async with (
        ScriptedLLMServer("openai", [search(), answer()]) as llm,
        servers(
            llm, 2 if cache_url else 1, **({"cache_url": cache_url} if cache_url else {})
        ) as running,
    ):
        yield running[0], running[-1]


async def _code(call: Any) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def test_a_report_must_name_the_target_of_the_decision_it_joins(
    cache_url: str | None,
) -> None:
    async with deciding(cache_url) as (first, second):
        # The model names no target: the decision's is the signal's resource.
        await first.stub.AnalyzeIncident(request("rr-target-1"), timeout=20)
        other = {**DECIDED, "name": "ledger"}
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await second.stub.ReportRemediationOutcome(
                report("rr-target-1", target=other), timeout=10
            )
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "payments/Deployment/ledger" in (refused.value.details() or "")
        record = await second.server.history.by_remediation_id("rr-target-1", Tenant("payments"))
        assert record.outcomes == ()
        ack = await second.stub.ReportRemediationOutcome(
            report("rr-target-1", target=DECIDED), timeout=10
        )
        assert ack.decision_known


async def test_an_id_used_in_another_namespace_is_another_remediation(
    cache_url: str | None,
) -> None:
    async with deciding(cache_url) as (first, second):
        await first.stub.AnalyzeIncident(request("rr-ns-1"), timeout=20)
        # The same id reported from another namespace: no decision of its own,
        # and answered like an id nobody used.
        elsewhere = {**DECIDED, "namespace": "team-a"}
        for rid in ("rr-ns-1", "rr-ns-unused"):
            ack = await second.stub.ReportRemediationOutcome(
                report(rid, target=elsewhere, succeeded=None, failed={"reason": "OOMKilled"}),
                timeout=10,
            )
            assert (ack.decision_known, ack.already_recorded) == (False, False)
        # The namespace that decided still reports its own outcome, joined.
        ack = await first.stub.ReportRemediationOutcome(
            report("rr-ns-1", target=DECIDED), timeout=10
        )
        assert ack.decision_known and not ack.already_recorded
        context = await second.server.history.context(TARGET, "")
        assert [(e.remediation_uid, e.outcome.value) for e in context.tier1] == [
            ("rr-ns-1", "Success")
        ]
