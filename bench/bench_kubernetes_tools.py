"""The kubernetes tools against a real kube-apiserver, and the built-in analyst with/without it.

Run: python bench/bench_kubernetes_tools.py [--runs 30]

Starts the test cluster (etcd + kube-apiserver, built once by
`scripts/ensure_kube_apiserver.sh`) and the test kubelet, writes the
example incidents into it, then prints:

- per tool: median and p95 latency of one call (discovery warm), and the
  compaction ratio: bytes of the raw objects the call read vs characters of
  the view the model is shown;
- per example incident: the built-in analyst's wall time (in process, the
  same engine the server runs) and the API requests it made, with the
  cluster and without it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hapi_grpc.adapters.kubernetes.credentials import load_connection  # noqa: E402
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader  # noqa: E402
from hapi_grpc.analyst import BuiltinAnalyst  # noqa: E402
from hapi_grpc.client import load_analyze_request  # noqa: E402
from hapi_grpc.domain.investigation.engine import InvestigationEngine  # noqa: E402
from hapi_grpc.domain.tenancy import Caller  # noqa: E402
from hapi_grpc.domain.toolsets.jsontext import compact_json  # noqa: E402
from hapi_grpc.domain.toolsets.tool import ToolContext  # noqa: E402
from hapi_grpc.domain.toolsets.toolset import ToolsetLimits  # noqa: E402
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope  # noqa: E402
from hapi_grpc.toolsets.kubernetes.tools import KubernetesToolsetSource  # noqa: E402
from hapi_grpc.transport.converters import incident_from_proto  # noqa: E402
from tests.fakes import kube_fixtures  # noqa: E402
from tests.fakes.kube_cluster import ensure_namespace, running_cluster  # noqa: E402
from tests.fakes.kubelet import running_kubelet  # noqa: E402

LIMITS = ToolsetLimits(max_calls=20, call_timeout=5.0, max_output_chars=12_000)


def _fresh(api: Any) -> tuple[str, str]:
    import kubernetes

    ns = f"b-{secrets.token_hex(3)}"
    ensure_namespace(kubernetes.client.CoreV1Api(api), ns)
    return ns, f"bn-{secrets.token_hex(3)}"


def _raw_bytes(cluster: Any, paths: list[str]) -> int:
    return sum(len(cluster.request("GET", p)[1]) for p in paths)


async def bench_tools(
    cluster: Any, reader: ApiServerReader, api: Any, kubelet: Any, runs: int
) -> None:
    ns, node = _fresh(api)
    s = kube_fixtures.crashloopbackoff(api, ns, node, kubelet)
    toolset = KubernetesToolsetSource(reader, KubernetesScope(), LIMITS, 10**9)(Caller())
    tools = {t.name: t for t in toolset.tools}
    pod = f"/api/v1/namespaces/{ns}/pods/{s.pod}"
    cases = [
        (
            "kubernetes_get Pod",
            "kubernetes_get",
            {"kind": "Pod", "namespace": ns, "name": s.pod},
            [pod],
        ),
        (
            "kubernetes_get Deployment",
            "kubernetes_get",
            {"kind": "Deployment", "namespace": ns, "name": s.deployment},
            [f"/apis/apps/v1/namespaces/{ns}/deployments/{s.deployment}"],
        ),
        (
            "kubernetes_get Node",
            "kubernetes_get",
            {"kind": "Node", "name": node},
            [f"/api/v1/nodes/{node}"],
        ),
        (
            "kubernetes_list Pod",
            "kubernetes_list",
            {"kind": "Pod", "namespace": ns},
            [f"/api/v1/namespaces/{ns}/pods"],
        ),
        (
            "kubernetes_events Pod",
            "kubernetes_events",
            {"namespace": ns, "kind": "Pod", "name": s.pod},
            [f"/api/v1/namespaces/{ns}/events", f"/apis/events.k8s.io/v1/namespaces/{ns}/events"],
        ),
        (
            "kubernetes_pod_logs previous",
            "kubernetes_pod_logs",
            {"namespace": ns, "pod": s.pod, "container": "cart-service", "previous": True},
            [f"{pod}/log?container=cart-service&previous=true"],
        ),
        (
            "kubernetes_owner_chain Pod",
            "kubernetes_owner_chain",
            {"namespace": ns, "name": s.pod},
            [
                pod,
                f"/apis/apps/v1/namespaces/{ns}/replicasets/{s.replicaset}",
                f"/apis/apps/v1/namespaces/{ns}/deployments/{s.deployment}",
                f"/api/v1/nodes/{node}",
            ],
        ),
    ]
    print(f"{'tool':32} {'median ms':>10} {'p95 ms':>8} {'raw B':>8} {'view ch':>8} {'ratio':>6}")
    for label, name, args, raw_paths in cases:
        tool = tools[name]
        parsed = tool.arguments.model_validate(args)
        await tool.run(parsed, ToolContext(5.0))  # warm discovery
        times, shown = [], 0
        for _ in range(runs):
            started = time.perf_counter()
            result = await tool.run(parsed, ToolContext(5.0))
            times.append((time.perf_counter() - started) * 1000)
            shown = len(compact_json(result.payload))
        raw = _raw_bytes(cluster, raw_paths)
        p95 = sorted(times)[max(0, int(len(times) * 0.95) - 1)]
        print(
            f"{label:32} {statistics.median(times):10.2f} {p95:8.2f}"
            f" {raw:8d} {shown:8d} {raw / shown:6.1f}"
        )


def _reader_requests(cluster: Any) -> int:
    """Requests the reader sent, as the API server's audit log saw them (aiohttp's
    User-Agent; the fixtures are created through the kubernetes client)."""
    events = cluster.audit_events()
    return len({e["auditID"] for e in events if "aiohttp" in e.get("userAgent", "")})


async def bench_analyst(cluster: Any, reader: ApiServerReader, api: Any, kubelet: Any) -> None:
    print(f"\n{'incident':24} {'cluster':>8} {'wall ms':>9} {'API requests':>13}  target")
    catalog = _catalog()
    for example, builder in (
        ("oomkilled.json", kube_fixtures.oomkilled),
        ("crashloopbackoff.json", kube_fixtures.crashloopbackoff),
        ("imagepullbackoff.json", kube_fixtures.imagepullbackoff),
        ("nodenotready.json", None),
        ("certificate-not-ready.json", None),
    ):
        ns, node = _fresh(api)
        req = load_analyze_request(ROOT / "examples" / example)
        if builder is not None:
            builder(api, ns, node, kubelet)
            req.incident.signal.namespace = ns
        elif example == "nodenotready.json":
            kube_fixtures.nodenotready(api, ns, node)
            req.incident.signal.resource_name = node
        else:
            kube_fixtures.certificate_not_ready(api, ns)
            req.incident.signal.namespace = ns
        incident = incident_from_proto(req.incident)
        for with_cluster in (False, True):
            sources = (
                [KubernetesToolsetSource(reader, KubernetesScope(), LIMITS)] if with_cluster else []
            )
            engine = InvestigationEngine(catalog, BuiltinAnalyst(), toolsets=sources)
            before = _reader_requests(cluster)
            started = time.perf_counter()
            result = await engine.investigate(incident)
            wall = (time.perf_counter() - started) * 1000
            t = result.target_resource
            target = f"{t.namespace}/{t.api_group or 'core'}/{t.kind}/{t.name}" if t else "-"
            print(
                f"{example:24} {'yes' if with_cluster else 'no':>8} {wall:9.1f}"
                f" {_reader_requests(cluster) - before:13d}  {target}"
            )


def _catalog() -> Any:
    from hapi_grpc.app import build_catalog
    from hapi_grpc.config import Settings

    return build_catalog(Settings())


async def main(runs: int) -> None:
    with (
        running_cluster() as cluster,
        running_kubelet() as kubelet,
        tempfile.TemporaryDirectory() as tmp,
    ):
        api = cluster.api_client()
        connection = await load_connection(
            {"KUBECONFIG": str(cluster.write_kubeconfig(Path(tmp) / "kc"))}
        )
        assert connection is not None
        reader = ApiServerReader(connection)
        try:
            await bench_tools(cluster, reader, api, kubelet, runs)
            await bench_analyst(cluster, reader, api, kubelet)
        finally:
            await reader.close()
            print(json.dumps({"api_requests_total": _reader_requests(cluster)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
