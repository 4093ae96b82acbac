"""What a flood of reports can push out of the remediation history, through the
real grpc.aio server, with the history in memory and in a real Redis: a
target's failures are kept apart from its successes and declines, and the
store-wide bound takes from the tenant that holds the most, so neither bound
lets a caller flush a failure that gates the next decision."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hapi.v1 import analysis_pb2
from tests.application.test_report_outcome import TARGET, report
from tests.domain.policy.test_grpc import OOM_ID, answer, request, search, servers
from tests.fakes.redis_server import running_redis
from tests.fakes.scripted_llm import ScriptedLLMServer
from tests.helpers.grpc_server import RunningServer

R = analysis_pb2.HumanReviewReason
FAILED = {
    "succeeded": None,
    "failed": {"reason": "BackoffLimitExceeded", "message": "patch failed"},
}


@pytest.fixture(params=["memory", "redis"])
def cache_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str | None]:
    if request.param == "memory":
        yield None
        return
    with running_redis(tmp_path) as redis:
        yield redis.url


@asynccontextmanager
async def server(cache_url: str | None, **settings: Any) -> AsyncIterator[RunningServer]:
    if cache_url:
        settings["cache_url"] = cache_url
    async with (
        # The model insists after the history check refuses its choice.
        ScriptedLLMServer("openai", [search(), *[answer()] * 4]) as llm,
        servers(llm, 1, **settings) as (only,),
    ):
        yield only


def declined(remediation_id: str, namespace: str = "payments", name: str = "payment-api") -> Any:
    target = {"namespace": namespace, "kind": "Deployment", "name": name, "apiGroup": "apps"}
    return report(
        remediation_id,
        target=target,
        executed=None,
        succeeded=None,
        declined={"reason": "not now"},
        preRemediationSpecHash=None,
        postRemediationSpecHash=None,
    )


async def refuses_the_failed_workflow(srv: RunningServer, remediation_id: str) -> None:
    result = (await srv.stub.AnalyzeIncident(request(remediation_id), timeout=20)).result
    assert result.needs_human_review, result
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION
    assert any("rr-failed-1" in w for w in result.warnings)


async def test_declines_do_not_push_a_failure_out_of_the_targets_history(
    cache_url: str | None,
) -> None:
    async with server(cache_url, history_max_per_target=5) as srv:
        # Completed an hour ago; the declines say "now": the newest by their
        # own word, and four times the target's bound.
        await srv.stub.ReportRemediationOutcome(
            report("rr-failed-1", completedAt=_hour_ago(), **FAILED), timeout=10
        )
        for i in range(20):
            await srv.stub.ReportRemediationOutcome(declined(f"rr-declined-{i}"), timeout=10)
        context = await srv.server.history.context(TARGET, "")
        kept = [e.remediation_uid for e in context.tier1]
        assert "rr-failed-1" in kept
        assert len(kept) == 6  # the failure, and the newest 5 declines
        await refuses_the_failed_workflow(srv, "rr-after-declines")


async def test_a_flood_from_another_namespace_does_not_evict_this_ones_history(
    cache_url: str | None,
) -> None:
    async with server(cache_url, history_max_entries=30) as srv:
        await srv.stub.ReportRemediationOutcome(report("rr-failed-1", **FAILED), timeout=10)
        for i in range(100):  # 100 targets, one report each: only the store-wide bound applies
            flood = declined(f"rr-flood-{i}", namespace="team-flood", name=f"app-{i}")
            await srv.stub.ReportRemediationOutcome(flood, timeout=10)
        assert [
            e.remediation_uid for e in (await srv.server.history.context(TARGET, "")).tier1
        ] == ["rr-failed-1"]
        await refuses_the_failed_workflow(srv, "rr-after-flood")
        # The flood kept itself within the bound: its oldest went.
        from hapi_grpc.domain.result import TargetResource

        first = TargetResource("team-flood", "Deployment", "app-0", "apps")
        last = TargetResource("team-flood", "Deployment", "app-99", "apps")
        assert (await srv.server.history.context(first, "")).tier1 == ()
        assert len((await srv.server.history.context(last, "")).tier1) == 1


def _hour_ago() -> str:
    import datetime

    when = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["OOM_ID"]
