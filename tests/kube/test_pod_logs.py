"""Pod logs through the real apiserver, proxied to the test kubelet."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import kubernetes
import pytest

from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kubelet import FakeKubelet, register_node

LINES = [f"line {i}" for i in range(1, 8)]


@pytest.fixture
def pod(
    kube_api: kubernetes.client.ApiClient, namespace: str, node_name: str, kubelet: FakeKubelet
) -> str:
    register_node(kube_api, node_name, kubelet)
    kubernetes.client.CoreV1Api(kube_api).create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "app"},
            "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": "app:1"}]},
        },
        _request_timeout=30,
    )
    now = datetime.now(UTC)
    times = [now - timedelta(minutes=10 - i) for i in range(len(LINES))]  # 10..4 min ago
    kubelet.set_log(namespace, "app", "main", LINES, times=times)
    kubelet.set_log(namespace, "app", "main", ["crashed: out of cheese"], previous=True)
    return "app"


def _log(cluster: KubeCluster, namespace: str, pod: str, query: str = "") -> tuple[int, str]:
    status, body = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log{query}")
    return status, body.decode()


def test_log_is_the_kubelets_canned_text(
    kube_cluster: KubeCluster, namespace: str, pod: str, kubelet: FakeKubelet
) -> None:
    assert _log(kube_cluster, namespace, pod) == (200, "".join(f"{x}\n" for x in LINES))
    (seen,) = kubelet.requests_for(namespace, pod)
    assert (seen.namespace, seen.container) == (namespace, "main")


def test_tail_lines_and_previous_are_honoured(
    kube_cluster: KubeCluster, namespace: str, pod: str, kubelet: FakeKubelet
) -> None:
    assert _log(kube_cluster, namespace, pod, "?tailLines=2") == (200, "line 6\nline 7\n")
    assert _log(kube_cluster, namespace, pod, "?previous=true&tailLines=5") == (
        200,
        "crashed: out of cheese\n",
    )
    assert [r.query.get("tailLines") for r in kubelet.requests_for(namespace, pod)] == ["2", "5"]
    assert kubelet.requests_for(namespace, pod)[1].query["previous"] == "true"


def test_since_limit_bytes_and_timestamps(
    kube_cluster: KubeCluster, namespace: str, pod: str
) -> None:
    # Lines are 10..4 minutes old: the last 6.5 minutes hold lines 5, 6, 7.
    assert _log(kube_cluster, namespace, pod, "?sinceSeconds=390") == (
        200,
        "line 5\nline 6\nline 7\n",
    )
    assert _log(kube_cluster, namespace, pod, "?limitBytes=9") == (200, "line 1\nli")
    status, text = _log(kube_cluster, namespace, pod, "?timestamps=true&tailLines=1")
    assert status == 200
    stamp, _, line = text.rstrip("\n").partition(" ")
    assert line == "line 7"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", stamp), stamp


def test_unknown_container_is_refused_by_the_apiserver(
    kube_cluster: KubeCluster, namespace: str, pod: str, kubelet: FakeKubelet
) -> None:
    status, text = _log(kube_cluster, namespace, pod, "?container=sidecar")
    assert status == 400 and "sidecar" in text
    assert kubelet.requests_for(namespace, pod) == []
