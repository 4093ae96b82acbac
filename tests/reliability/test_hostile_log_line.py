"""One hostile log line cannot freeze the server.

A pod in a watched namespace writes lines that made the backtracking
redaction patterns go cubic ("token-" * 300 held the event loop for 12.7 s).
The real `hapi-grpc serve`, reading the real test cluster and the test
kubelet, investigates that pod while a prober checks the gRPC health service
every 20 ms: the investigations finish, and no health answer takes 1 s.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
import kubernetes
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hapi.v1 import service_pb2, service_pb2_grpc
from hapi_grpc.client import load_analyze_request
from tests.fakes import kube_fixtures
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kube_pytest import kube_api, kube_cluster, kubelet, namespace, node_name
from tests.fakes.kubelet import FakeKubelet
from tests.fakes.serve_process import SERVICE, ServeProcess

__all__ = ["kube_api", "kube_cluster", "kubelet", "namespace", "node_name"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HEALTH_BOUND = 1.0  # seconds for any one health answer
PROBE_EVERY = 0.02
INVESTIGATIONS = 3  # at once, each reading every hostile line

# Each a single log line: keyword repetitions with the separators the
# assignment pattern accepts, and a 64 KB one.
HOSTILE_LINES = [
    "token-" * 2_000,
    "x.token" * 2_000,
    "password." * 1_500,
    "api_key_" * 1_500,
    ("secret-" * 10_000)[: 64 * 1024],
]


async def _probe(address: str, stop: asyncio.Event) -> list[float]:
    """Latency of every health check until `stop`; a failed check counts as the bound."""
    latencies: list[float] = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while not stop.is_set():
            started = time.monotonic()
            try:
                reply = await stub.Check(
                    health_pb2.HealthCheckRequest(service=SERVICE), timeout=HEALTH_BOUND
                )
                ok = reply.status == health_pb2.HealthCheckResponse.SERVING
            except grpc.aio.AioRpcError:
                ok = False
            latencies.append(time.monotonic() - started if ok else HEALTH_BOUND)
            await asyncio.sleep(PROBE_EVERY)
    return latencies


def _distinct(
    request: service_pb2.AnalyzeIncidentRequest, count: int
) -> list[service_pb2.AnalyzeIncidentRequest]:
    """`count` copies that are different incidents, so none is answered from another."""
    copies = []
    for i in range(count):
        copy = service_pb2.AnalyzeIncidentRequest()
        copy.CopyFrom(request)
        copy.incident.remediation_id = f"{request.incident.remediation_id}-{i}"
        copies.append(copy)
    return copies


@pytest.mark.timeout(180)
async def test_hostile_log_line_neither_stalls_the_investigation_nor_health(
    kube_cluster: KubeCluster,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
    tmp_path: Path,
) -> None:
    s = kube_fixtures.crashloopbackoff(kube_api, namespace, node_name, kubelet)
    lines = [*HOSTILE_LINES, "FATAL config key REDIS_URL missing", *HOSTILE_LINES]
    for previous in (False, True):
        kubelet.set_log(namespace, s.pod, s.container, lines, previous=previous)
    server = ServeProcess(KUBECONFIG=str(kube_cluster.write_kubeconfig(tmp_path / "kc")))
    await server.start()
    try:
        stop = asyncio.Event()
        prober = asyncio.create_task(_probe(server.address, stop))
        request = load_analyze_request(EXAMPLES / "crashloopbackoff.json")
        request.incident.signal.namespace = namespace
        started = time.monotonic()
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
            responses = await asyncio.gather(
                *(
                    stub.AnalyzeIncident(request, timeout=120)
                    for request in _distinct(request, INVESTIGATIONS)
                )
            )
        elapsed = time.monotonic() - started
        await asyncio.sleep(3 * PROBE_EVERY)
        stop.set()
        latencies = await prober
    finally:
        await server.close()
    # The pod's logs were read, hostile lines and all, and the answer came.
    assert kubelet.requests_for(namespace, s.pod), "the investigation never read the logs"
    for response in responses:
        result = response.result
        assert result.target_resource.name == "cart-service", result
        assert "FATAL config key REDIS_URL missing" in result.root_cause_assessment
    assert elapsed < 60, elapsed
    assert len(latencies) >= 3
    assert max(latencies) < HEALTH_BOUND, sorted(latencies)[-5:]
