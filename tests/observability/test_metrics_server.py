"""The scrape endpoint over real HTTP."""

from __future__ import annotations

import socket

import aiohttp
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from hapi_grpc.observability import metrics
from hapi_grpc.observability.metrics_server import start_metrics_server


async def test_metrics_endpoint_serves_prometheus_text_with_fresh_rates() -> None:
    # One finished investigation that searched the catalog, one that did not;
    # three cache hits of four lookups. Deltas keep this independent of other tests.
    metrics.INVESTIGATIONS.labels(outcome="selected", review_reason="none").inc()
    metrics.INVESTIGATIONS_USING_CATALOG.inc()
    metrics.CACHE_LOOKUPS.labels(kind="search", result="hit").inc(3)
    metrics.CACHE_LOOKUPS.labels(kind="search", result="miss").inc()
    metrics.TOOL_CALLS.labels(tool="search_workflow_catalog", status="success").inc()

    runner, port = await start_metrics_server("127.0.0.1", 0)
    try:
        assert port > 0
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                assert response.status == 200
                assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                body = await response.text()
            async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200
                assert (await response.text()).strip() == "ok"
            async with session.get(f"http://127.0.0.1:{port}/nothing") as response:
                assert response.status == 404
    finally:
        await runner.cleanup()

    families = {f.name: f for f in text_string_to_metric_families(body)}
    for name in (
        "holmesgpt_playbook_tool_call",
        "holmesgpt_playbook_tool_call_duration_seconds",
        "holmesgpt_playbook_tool_call_errors",
        "holmesgpt_playbook_tool_call_rate",
        "holmesgpt_playbook_tool_call_cache_hit_rate",
        "hapi_investigations",
        "hapi_grpc_server_handled",
    ):
        assert name in families, name
    assert families["holmesgpt_playbook_tool_call_duration_seconds"].type == "histogram"
    # The gauges were recomputed from the counters at scrape time.
    rate = families["holmesgpt_playbook_tool_call_rate"].samples[0].value
    hit_rate = families["holmesgpt_playbook_tool_call_cache_hit_rate"].samples[0].value
    investigations = _total(families["hapi_investigations"])
    searched = _total(families["hapi_investigations_catalog_searched"])
    hits = _total(families["hapi_cache_lookups"], result="hit")
    misses = _total(families["hapi_cache_lookups"], result="miss")
    assert rate == pytest.approx(searched / investigations)
    assert hit_rate == pytest.approx(hits / (hits + misses))
    assert 0 < rate <= 1 and 0 < hit_rate <= 1


def _total(family: Metric, **match: str) -> float:
    return sum(
        s.value
        for s in family.samples
        if s.name.endswith("_total") and all(s.labels.get(k) == v for k, v in match.items())
    )


async def test_openmetrics_is_served_when_asked_for() -> None:
    runner, port = await start_metrics_server("127.0.0.1", 0)
    try:
        headers = {"Accept": "application/openmetrics-text; version=1.0.0"}
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/metrics", headers=headers) as response:
                assert response.headers["Content-Type"].startswith("application/openmetrics-text")
                assert (await response.text()).rstrip().endswith("# EOF")
    finally:
        await runner.cleanup()


async def test_busy_port_fails_loudly_and_releases_nothing() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        with pytest.raises(OSError):
            await start_metrics_server("127.0.0.1", holder.getsockname()[1])
