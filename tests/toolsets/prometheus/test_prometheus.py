"""PrometheusClient against a real Prometheus serving backfilled series."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError
from hapi_grpc.domain.sensitive import redact
from hapi_grpc.toolsets.prometheus import PrometheusSettings, parse_headers
from hapi_grpc.toolsets.prometheus.client import (
    PrometheusClient,
    PrometheusLimits,
    format_duration,
)
from hapi_grpc.toolsets.prometheus.source import (
    MAX_RESPONSE_BYTES,
    MetricsQueryError,
    MetricsSource,
    MetricsUnavailableError,
    QueryRefusedError,
)
from hapi_grpc.toolsets.prometheus.summary import summarize_result
from hapi_grpc.toolsets.prometheus.tools import parse_duration
from tests.fakes.prometheus_server import (
    ERROR_RATE,
    ERRORS_START_AGO,
    MEMORY_LIMIT,
    WINDOW,
    PrometheusServer,
    RecordingProxy,
)

MEMORY = 'container_memory_working_set_bytes{namespace="payments"}'


def client(
    url: str,
    *,
    limits: PrometheusLimits | None = None,
    request_timeout: float = 10.0,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
    **credentials: str,
) -> PrometheusClient:
    settings = PrometheusSettings(**{f"prometheus_{k}": v for k, v in credentials.items()})
    source = MetricsSource(
        "Prometheus", url, settings, request_timeout, max_bytes=max_response_bytes
    )
    return PrometheusClient(source, limits)


async def test_instant_query_returns_the_vector(prometheus: PrometheusServer) -> None:
    prom = client(prometheus.url)
    try:
        result = await prom.query(MEMORY, time=prometheus.now)
    finally:
        await prom.close()
    assert result.result_type == "vector"
    by_pod = {s.labels["pod"]: s.samples[0][1] for s in result.series}
    assert by_pod == {"payment-api-1": MEMORY_LIMIT, "payment-api-2": 262_144_000}


async def test_range_query_summary_shows_the_climb_to_the_limit(
    prometheus: PrometheusServer,
) -> None:
    prom = client(prometheus.url)
    try:
        result = await prom.query_range(
            MEMORY, start=prometheus.now - WINDOW, end=prometheus.now, step=60
        )
    finally:
        await prom.close()
    assert result.result_type == "matrix"
    summary = summarize_result(result, max_series=1)
    assert summary["series_total"] == 2
    assert summary["series_not_shown"] == 1
    (oom,) = summary["series"]
    assert oom["labels"]["pod"] == "payment-api-1"  # the largest last value comes first
    assert oom["max"] == MEMORY_LIMIT == oom["last"]
    assert oom["points"] == WINDOW // 60 + 1
    assert oom["trend"]["direction"] == "rising"
    assert oom["trend"]["slope_per_minute"] > 0


async def test_error_rate_and_stopped_node(prometheus: PrometheusServer) -> None:
    prom = client(prometheus.url)
    try:
        rate = await prom.query(
            'sum(rate(http_requests_total{namespace="payments",code=~"5.."}[5m]))',
            time=prometheus.now,
        )
        before = await prom.query(
            'sum(rate(http_requests_total{code=~"5.."}[5m]))',
            time=prometheus.now - ERRORS_START_AGO - 300,
        )
        up = await prom.query('up{job="node-exporter"}', time=prometheus.now)
        up_range = await prom.query_range(
            'up{job="node-exporter"}', start=prometheus.now - WINDOW, end=prometheus.now, step=60
        )
    finally:
        await prom.close()
    assert rate.series[0].samples[0][1] == pytest.approx(ERROR_RATE)
    assert before.series[0].samples[0][1] == 0
    assert [s.labels["instance"] for s in up.series] == ["node-1:9100"]
    last_seen = {s.labels["instance"]: s.samples[-1][0] for s in up_range.series}
    # node-2's last sample plus the 5-minute lookback, on the 60 s step grid.
    assert last_seen["node-1:9100"] == prometheus.now
    assert prometheus.now - ERRORS_START_AGO <= last_seen["node-2:9100"]
    assert last_seen["node-2:9100"] <= prometheus.now - ERRORS_START_AGO + 300


async def test_scalar_result(prometheus: PrometheusServer) -> None:
    prom = client(prometheus.url)
    try:
        result = await prom.query("scalar(vector(42))", time=prometheus.now)
    finally:
        await prom.close()
    assert summarize_result(result) == {
        "result_type": "scalar",
        "time": float(prometheus.now),
        "value": 42.0,
    }


async def test_promql_errors_carry_the_servers_message(prometheus: PrometheusServer) -> None:
    prom = client(prometheus.url)
    try:
        with pytest.raises(MetricsQueryError) as bad:
            await prom.query("sum(rate(http_requests_total[5m])", time=prometheus.now)
        with pytest.raises(MetricsQueryError) as execution:
            # Same labels on both sides after `ignoring(code)`: many-to-many is an execution error.
            await prom.query(
                "http_requests_total + ignoring(code) http_requests_total", time=prometheus.now
            )
    finally:
        await prom.close()
    assert bad.value.error_type == "bad_data"
    assert "parse error" in bad.value.message
    assert not isinstance(bad.value, QueryRefusedError)
    assert execution.value.error_type == "execution"
    assert "many-to-many" in execution.value.message


async def test_range_bounds_are_refused_before_sending(prometheus: PrometheusServer) -> None:
    proxy = await RecordingProxy(prometheus.url).start()
    prom = client(proxy.url, limits=PrometheusLimits(max_range_seconds=7200, max_points=100))
    now = prometheus.now
    try:
        with pytest.raises(QueryRefusedError, match="longer than the maximum of 2h"):
            await prom.query_range(MEMORY, start=now - 3 * 3600, end=now, step=600)
        with pytest.raises(QueryRefusedError) as points:
            await prom.query_range(MEMORY, start=now - 3600, end=now, step=15)
        with pytest.raises(QueryRefusedError, match="end must be after start"):
            await prom.query_range(MEMORY, start=now, end=now - 60, step=15)
        with pytest.raises(QueryRefusedError, match="not a label name"):
            await prom.label_values("bad-name")
        assert proxy.seen == []  # none of them reached the server
        # The step the message suggests is accepted.
        ok = await prom.query_range(MEMORY, start=now - 3600, end=now, step=37)
    finally:
        await prom.close()
        await proxy.stop()
    assert "241 points per series, more than the maximum of 100" in points.value.message
    assert "at least 37s" in points.value.message
    assert len(ok.series) == 2


async def test_lookups_are_bounded(prometheus: PrometheusServer) -> None:
    prom = client(prometheus.url, limits=PrometheusLimits(max_lookup_items=2))
    try:
        names = await prom.label_values("__name__")
        pods = await prom.label_values("pod", match=['{namespace="payments"}'])
        series = await prom.series([MEMORY, 'up{job="node-exporter"}'])
    finally:
        await prom.close()
    assert names.total >= 4 and len(names.values) == 2
    assert names.values == ("container_memory_working_set_bytes", "http_requests_total")
    assert pods.values == ("payment-api-1", "payment-api-2")
    # Two memory series and both nodes' (node-2 stopped reporting 20 minutes ago).
    assert series.total == 4 and len(series.series) == 2


async def test_token_and_tenant_header_are_sent(
    prometheus: PrometheusServer, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-token-value\n")
    proxy = await RecordingProxy(prometheus.url, token="first-token-value").start()
    prom = client(
        proxy.url,
        token_file=str(token_file),
        headers="X-Scope-OrgID=tenant-a",
    )
    try:
        await prom.query("vector(1)", time=prometheus.now)
        # A rotated token is picked up on the next call, without a restart.
        token_file.write_text("second-token-value-longer\n")
        proxy.token = "second-token-value-longer"
        await prom.query("vector(1)", time=prometheus.now)
        proxy.token = "something-else"
        with pytest.raises(MetricsUnavailableError, match="refused the credentials") as refused:
            await prom.query("vector(1)", time=prometheus.now)
    finally:
        await prom.close()
        await proxy.stop()
    assert [h["Authorization"] for h in proxy.seen] == [
        "Bearer first-token-value",
        "Bearer second-token-value-longer",
        "Bearer second-token-value-longer",
    ]
    assert all(h["X-Scope-OrgID"] == "tenant-a" for h in proxy.seen)
    assert "second-token" not in refused.value.message
    assert redact("token second-token-value-longer") == "token [REDACTED]"


async def test_server_timeout_is_clipped_to_the_budget(prometheus: PrometheusServer) -> None:
    proxy = await RecordingProxy(prometheus.url).start()
    prom = client(proxy.url, request_timeout=10.0)
    try:
        with budget_scope(Budget.from_timeout(2.0)):
            await prom.query("vector(1)", time=prometheus.now)
        await prom.query("vector(1)", time=prometheus.now)
        await prom.query("vector(1)", time=prometheus.now, timeout=3.0)
    finally:
        await prom.close()
        await proxy.stop()
    clipped, default, capped = (h["path"] for h in proxy.seen)
    capped_ms = int(capped.split("timeout=")[1].split("ms")[0])
    assert 2000 < capped_ms < 3000  # a toolset's per-call timeout lowers it too
    clipped_ms = int(clipped.split("timeout=")[1].split("ms")[0])
    default_ms = int(default.split("timeout=")[1].split("ms")[0])
    assert 1000 < clipped_ms < 2000
    assert 8000 < default_ms < 10000


async def test_slow_server_times_out_inside_the_budget(prometheus: PrometheusServer) -> None:
    proxy = await RecordingProxy(prometheus.url, delay=1.5).start()
    prom = client(proxy.url, request_timeout=0.3)
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(MetricsUnavailableError, match=r"did not answer within 0\.30s"):
            await prom.query("vector(1)")
        assert loop.time() - started < 2.0
        with budget_scope(Budget.from_timeout(0.3)), pytest.raises(BudgetExhaustedError):
            await client(proxy.url, request_timeout=10.0).query("vector(1)")
    finally:
        await prom.close()
        await proxy.stop()


async def test_unreachable_server_is_unavailable() -> None:
    from tests.fakes.prometheus_server import free_port

    prom = client(f"http://user:pw@127.0.0.1:{free_port()}/prometheus")
    try:
        with pytest.raises(MetricsUnavailableError) as down:
            await prom.query("up")
    finally:
        await prom.close()
    assert "unreachable" in down.value.message
    assert "pw" not in down.value.message and "127.0.0.1" not in down.value.message


def test_durations_and_headers() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("90s") == 90
    with pytest.raises(ValueError):
        parse_duration("5 minutes")
    assert format_duration(5400) == "1h30m"
    assert parse_headers('{"X-Scope-OrgID": "a"}') == parse_headers("X-Scope-OrgID=a")
    with pytest.raises(ValueError, match="Name=value"):
        parse_headers("novalue")
    with pytest.raises(ValueError, match="line break"):
        client("http://x", headers='{"X-A": "a\\r\\nInjected: 1"}')
    with pytest.raises(ValueError, match="must be a URL with scheme http:// or https://"):
        PrometheusSettings(prometheus_url="prometheus:9090")


async def test_clients_from_settings(prometheus: PrometheusServer) -> None:
    with pytest.raises(ValueError, match="HAPI_PROMETHEUS_URL is not set"):
        PrometheusClient.of(PrometheusSettings())
    prom = PrometheusClient.of(
        PrometheusSettings(
            prometheus_url=prometheus.url, prometheus_headers='{"X-Scope-OrgID": "t"}'
        )
    )
    try:
        result = await prom.query("vector(3)", time=prometheus.now)
    finally:
        await prom.close()
    assert result.series[0].samples[0][1] == 3
    with pytest.raises(ValueError, match="Name=value"):
        PrometheusSettings(prometheus_url=prometheus.url, prometheus_headers="oops")


async def test_oversized_answer_is_an_actionable_error(prometheus: PrometheusServer) -> None:
    from hapi_grpc.toolsets.prometheus.source import ResponseTooLargeError

    prom = client(prometheus.url, max_response_bytes=2048)
    try:
        with pytest.raises(ResponseTooLargeError, match="more than 2048 bytes") as big:
            await prom.query_range(
                MEMORY, start=prometheus.now - WINDOW, end=prometheus.now, step=30
            )
        small = await prom.query(f"max({MEMORY})", time=prometheus.now)
    finally:
        await prom.close()
    assert isinstance(big.value, MetricsQueryError) and big.value.error_type == "too_large"
    assert small.series[0].samples[0][1] == MEMORY_LIMIT
