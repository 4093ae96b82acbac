"""AlertmanagerClient against a real Alertmanager with alerts posted to its API."""

from __future__ import annotations

import pytest

from hapi_grpc.toolsets.alertmanager.client import (
    AlertmanagerClient,
    AlertmanagerLimits,
    matcher,
)
from hapi_grpc.toolsets.prometheus import PrometheusSettings
from hapi_grpc.toolsets.prometheus.source import MetricsUnavailableError, QueryRefusedError
from tests.fakes.alertmanager_server import AlertmanagerServer
from tests.fakes.prometheus_server import free_port


def _client(url: str, limits: AlertmanagerLimits | None = None) -> AlertmanagerClient:
    client = AlertmanagerClient.of(url, PrometheusSettings(), 5.0)
    if limits is not None:
        client.limits = limits
    return client


@pytest.fixture(scope="module")
def storm(alertmanager: AlertmanagerServer) -> AlertmanagerServer:
    alerts = [
        {
            "labels": {
                "alertname": "KubePodOOMKilled",
                "namespace": "payments",
                "pod": f"payment-api-{i}",
                "severity": "critical",
            },
            "annotations": {"summary": f"pod payment-api-{i} was OOM killed", "extra": "x"},
            "startsAt": f"2026-01-01T10:0{i}:00Z",
        }
        for i in range(5)
    ]
    alerts.append(
        {
            "labels": {
                "alertname": "HighErrorRate",
                "namespace": "payments",
                "severity": "warning",
            },
            "annotations": {"description": "5xx above 5%\n  for 10m"},
        }
    )
    alerts.append({"labels": {"alertname": "Noisy", "namespace": "payments", "team": "muted"}})
    alerts.append({"labels": {"alertname": "KubePodOOMKilled", "namespace": "checkout"}})
    alertmanager.post_alerts(alerts)
    alertmanager.silence({"team": "muted"})
    return alertmanager


async def test_active_alerts_of_a_namespace(storm: AlertmanagerServer) -> None:
    am = _client(storm.url, AlertmanagerLimits(max_alerts=3))
    try:
        out = await am.active_alerts(namespace="payments")
        checkout = await am.active_alerts({"alertname": "KubePodOOMKilled"}, namespace="checkout")
        none = await am.active_alerts(namespace='no"such\\namespace')
    finally:
        await am.close()
    # The silenced alert is left out; the other namespace too.
    assert out["total"] == 6
    assert out["by_alertname"] == {"KubePodOOMKilled": 5, "HighErrorRate": 1}
    assert len(out["alerts"]) == 3 and out["alerts_not_shown"] == 3
    first = out["alerts"][0]
    assert first["alertname"] in ("KubePodOOMKilled", "HighErrorRate")
    assert all(a["state"] == "active" for a in out["alerts"])
    oom = [a for a in out["alerts"] if a["alertname"] == "KubePodOOMKilled"]
    assert oom and oom[0]["severity"] == "critical" and "extra" not in oom[0]
    assert oom[0]["labels"] == {"namespace": "payments", "pod": oom[0]["labels"]["pod"]}
    assert checkout["total"] == 1 and checkout["matchers"]["namespace"] == "checkout"
    assert none["total"] == 0 and none["alerts"] == []


async def test_description_is_folded_and_clipped(storm: AlertmanagerServer) -> None:
    am = _client(storm.url)
    try:
        out = await am.active_alerts({"alertname": "HighErrorRate"})
    finally:
        await am.close()
    (alert,) = out["alerts"]
    assert alert["description"] == "5xx above 5% for 10m"


def test_matcher_quoting_and_names() -> None:
    assert matcher("namespace", 'a"b\\c') == 'namespace="a\\"b\\\\c"'
    with pytest.raises(QueryRefusedError):
        matcher("bad name", "x")


async def test_unreachable_alertmanager() -> None:
    am = _client(f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(MetricsUnavailableError, match="Alertmanager is unreachable"):
            await am.active_alerts(namespace="payments")
    finally:
        await am.close()
