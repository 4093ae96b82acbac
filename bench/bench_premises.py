"""Premise evaluation's share of an investigation's CPU, measured in the same run.

Run: python bench/bench_premises.py [--investigations 200] [--max-share 0.05]

Whole investigations as the service runs them: AnalyzeIncident calls over gRPC to
the server built as `hapi-grpc serve` builds it (in this process), which reads a real
kube-apiserver (the test cluster, built once by `scripts/ensure_kube_apiserver.sh`,
holding the OOMKilled incident of examples/) through the `kubernetes` toolset. A
child process sends the calls and serves the model over HTTP (a `ScriptedLLMServer`),
so neither is counted: the model reads what a model does (the Pod, its owner chain
with the Deployment's revisions, the previous log, the Pod's events), searches the
bundled catalog, validates a memory raise and answers. This process's CPU per call
is the service's CPU per investigation.

Every evaluation of premises (`evaluate_premises`: packs and declarations, for the
search results shown, the validation and the final check) is timed with the same
CPU clock inside those investigations and divided by their CPU. Run on the bundled
catalog and on it without declarations (packs alone). Exits 1 when a share is above
`--max-share` (5%).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import secrets
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hapi_grpc.domain.selection_gate as gate_module  # noqa: E402
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog  # noqa: E402
from hapi_grpc.adapters.catalog.loader import load_bundled_catalog  # noqa: E402
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider  # noqa: E402
from hapi_grpc.app import build_server  # noqa: E402
from hapi_grpc.config import Settings  # noqa: E402
from tests.fakes import kube_fixtures  # noqa: E402
from tests.fakes.kube_cluster import running_cluster  # noqa: E402
from tests.fakes.kube_toolset import open_reader, toolset_source  # noqa: E402
from tests.fakes.kubelet import running_kubelet  # noqa: E402
from tests.fakes.scripted_llm import ScriptedLLMServer, Step  # noqa: E402


def steps(namespace: str, pod: str) -> list[Any]:
    """The model's turns: read, search, validate, answer (then the same answer)."""
    ref = {"kind": "Pod", "namespace": namespace, "name": pod}
    params = {"NAMESPACE": namespace, "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
    answer = json.dumps(
        {
            "analysis_summary": "payment-api is OOMKilled repeatedly",
            "root_cause_assessment": "its working set reaches the 512Mi limit",
            "rca_severity": "critical",
            "selected_workflow": {
                "workflow_id": "oomkill-increase-memory-v1",
                "version": "1.0.0",
                "confidence": 0.9,
                "rationale": "steady usage at the limit",
                "estimated_risk": "low",
                "parameters": params,
            },
            "alternative_workflows": [],
            "warnings": [],
        }
    )
    logs = {"namespace": namespace, "pod": pod, "container": "payment-api", "previous": True}
    return [
        Step.tool_calls([("kubernetes_get", ref)]),
        Step.tool_calls([("kubernetes_owner_chain", ref)]),
        Step.tool_calls([("kubernetes_pod_logs", logs)]),
        Step.tool_calls([("kubernetes_events", ref)]),
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical memory"})]),
        Step.tool_calls(
            [
                (
                    "validate_workflow_parameters",
                    {"workflow_id": "oomkill-increase-memory-v1", "parameters": params},
                )
            ]
        ),
        *[Step.text(answer)] * 3,
    ]


def child(conn: Connection, namespace: str, pod: str) -> None:
    """The model and the caller, in a child process: their CPU is not the service's.

    Sends the model's base URL; then, for each (address, label, count) received, makes
    `count` AnalyzeIncident calls one after the other and answers the decision."""
    import grpc

    from hapi.v1 import service_pb2_grpc
    from hapi_grpc.client import load_analyze_request

    async def run() -> None:
        script = steps(namespace, pod)
        async with ScriptedLLMServer("openai", script_for=lambda _: script) as server:
            conn.send(server.base_url)
            loop = asyncio.get_running_loop()
            while (order := await loop.run_in_executor(None, conn.recv)) is not None:
                address, label, count = order
                request = load_analyze_request(ROOT / "examples" / "oomkilled.json")
                request.incident.signal.namespace = namespace
                request.incident.signal.resource_kind = "Pod"
                request.incident.signal.resource_name = pod
                outcome = ""
                async with grpc.aio.insecure_channel(address) as channel:
                    stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
                    for i in range(count):
                        # Each its own incident: the model tells conversations by their start.
                        request.incident.remediation_id = f"rr-{label}-{i}"
                        request.incident.error_details.error_message = f"OOMKilled ({label} {i})"
                        result = (await stub.AnalyzeIncident(request, timeout=60)).result
                        outcome = (
                            "automated"
                            if not result.needs_human_review
                            else f"review: {list(result.warnings)[-1][:200]}"
                        )
                conn.send(outcome)

    asyncio.run(run())


class Timed:
    """`evaluate_premises` as the gate calls it, adding the CPU each call spends."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.calls = 0
        self._inner = gate_module.evaluate_premises

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return self._inner(*args, **kwargs)
        finally:
            self.cpu += time.process_time() - started
            self.calls += 1


async def share(
    catalog: EmbeddedCatalog, reader: Any, base_url: str, conn: Connection, count: int, label: str
) -> tuple[float, float, float, str]:
    """(premise CPU share, CPU per investigation us, premise CPU per investigation us, outcome)."""
    settings = Settings(grpc_host="127.0.0.1", grpc_port=0, metrics_port=-1)  # as shipped
    llm = OpenAICompatibleProvider(base_url, "scripted", "sk-bench-0000000000", max_retries=0)
    server = build_server(settings, catalog=catalog, llm=llm, toolsets=[toolset_source(reader)])
    await server.start()
    loop = asyncio.get_running_loop()
    address = f"127.0.0.1:{server.port}"
    try:
        conn.send((address, f"warm-{label}", 3))  # compiled expressions, schemas, connections
        outcome = await loop.run_in_executor(None, conn.recv)
        timed = Timed()
        gate_module.evaluate_premises = timed  # type: ignore[assignment]
        try:
            started = time.process_time()
            conn.send((address, label, count))
            await loop.run_in_executor(None, conn.recv)
            total = time.process_time() - started
        finally:
            gate_module.evaluate_premises = timed._inner  # type: ignore[assignment]
    finally:
        await server.stop(0)
        await llm.close()
    return timed.cpu / total, total / count * 1e6, timed.cpu / count * 1e6, outcome


async def measure(args: argparse.Namespace) -> int:
    workflows = load_bundled_catalog()
    stripped = [w.model_copy(update={"preconditions": (), "invariants": ()}) for w in workflows]
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_cluster() as cluster,
        running_kubelet() as kubelet,
    ):
        namespace, node = f"bench-{secrets.token_hex(3)}", f"node-{secrets.token_hex(3)}"
        api = cluster.api_client()
        kubernetes_namespace(api, namespace)
        scenario = kube_fixtures.oomkilled(api, namespace, node, kubelet)
        reader = await open_reader(cluster, Path(tmp) / "kubeconfig")
        context = multiprocessing.get_context("spawn")
        parent, end = context.Pipe()
        process = context.Process(target=child, args=(end, namespace, scenario.pod), daemon=True)
        process.start()
        missed = False
        try:
            base_url = parent.recv()
            for label, catalog in (
                ("bundled catalog", EmbeddedCatalog(workflows)),
                ("declarations stripped", EmbeddedCatalog(stripped)),
            ):
                ratio, per_run, premises, outcome = await share(
                    catalog, reader, base_url, parent, args.investigations, label[:7]
                )
                verdict = "ok" if ratio <= args.max_share else "MISS"
                missed |= ratio > args.max_share
                print(
                    f"{label}: premise evaluation {premises:.0f} us of {per_run:.0f} us CPU"
                    f" per investigation = {ratio:.1%} (target <= {args.max_share:.0%})"
                    f" {verdict}; decision: {outcome}"
                )
        finally:
            parent.send(None)
            process.join(10)
            await reader.close()
    return 1 if missed else 0


def kubernetes_namespace(api: Any, name: str) -> None:
    import kubernetes

    kubernetes.client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})


def main() -> int:
    parser = argparse.ArgumentParser(description="premise evaluation's share of investigation CPU")
    parser.add_argument("--investigations", type=int, default=200)
    parser.add_argument("--max-share", type=float, default=0.05)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    return asyncio.run(measure(args))


if __name__ == "__main__":
    sys.exit(main())
