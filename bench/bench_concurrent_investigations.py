"""N concurrent AnalyzeIncident calls against a model that takes 2 s per turn.

Run: python bench/bench_concurrent_investigations.py [--n 1000] [--turn-seconds 2]

A real gRPC server (embedded catalog, OpenAI-compatible adapter) serves N
concurrent calls over one channel; the model is a `ScriptedLLMServer` on
127.0.0.1 whose every reply takes `--turn-seconds`. Each investigation
takes 3 turns (search, validate, answer), so the ideal wall time is
3 x turn-seconds: the figure shows how much the service adds when it has N
investigations waiting on the model at once. Prints the wall time, the
outcome counts and the peak RSS of the service process. The fake model runs
in a child process so that its work does not count as the service's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes / tests.helpers

from hapi.v1 import incident_pb2, service_pb2
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.engine import EngineSettings
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server

TURNS = 3
PARAMS = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
ANSWER = {
    "analysis_summary": "payment-api is OOMKilled repeatedly",
    "root_cause_assessment": "memory limit below the working set",
    "rca_severity": "critical",
    "selected_workflow": {
        "workflow_id": "oomkill-increase-memory-v1",
        "version": "1.0.0",
        "confidence": 0.9,
        "rationale": "steady growth to the limit",
        "estimated_risk": "low",
        "parameters": PARAMS,
    },
    "alternative_workflows": [],
    "warnings": [],
    "context_used": {"cluster_state": "", "resource_availability": "", "blast_radius": ""},
}


def script(turn_seconds: float) -> list[Step]:
    return [
        Step.tool_calls(
            [("search_workflow_catalog", {"query": "OOMKilled critical memory"})],
            delay=turn_seconds,
        ),
        Step.tool_calls(
            [
                (
                    "validate_workflow_parameters",
                    {"workflow_id": "oomkill-increase-memory-v1", "parameters": PARAMS},
                )
            ],
            delay=turn_seconds,
        ),
        Step.text(json.dumps(ANSWER), delay=turn_seconds),
    ]


def request(index: int) -> service_pb2.AnalyzeIncidentRequest:
    # A distinct resource per call gives each its own scripted conversation.
    return service_pb2.AnalyzeIncidentRequest(
        incident=incident_pb2.Incident(
            remediation_id=f"rr-bench-{index}",
            signal=incident_pb2.SignalInfo(
                signal_type="OOMKilled",
                severity=1,  # SEVERITY_CRITICAL
                component="deployment",
                namespace="payments",
                resource_kind="Deployment",
                resource_name=f"payment-api-{index}",
            ),
        )
    )


async def sample_rss(peak: list[int], stop: asyncio.Event) -> None:
    process = psutil.Process()
    while not stop.is_set():  # ends when the benchmark does
        peak[0] = max(peak[0], process.memory_info().rss)
        try:
            await asyncio.wait_for(stop.wait(), 0.1)
        except TimeoutError:
            pass


def serve_model(conn: Connection, turn_seconds: float) -> None:
    """Child process: the scripted model, on its own core and event loop."""
    logging.disable(logging.WARNING)

    async def run() -> None:
        steps = script(turn_seconds)
        async with ScriptedLLMServer("openai", script_for=lambda _: steps) as server:
            conn.send(server.base_url)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, conn.recv)  # until the parent is done
            conn.send(len(server.requests))

    asyncio.run(run())


async def main(n: int, turn_seconds: float) -> int:
    logging.disable(logging.WARNING)
    catalog = EmbeddedCatalog.from_file(None)
    parent, child = multiprocessing.get_context("spawn").Pipe()
    model = multiprocessing.get_context("spawn").Process(
        target=serve_model, args=(child, turn_seconds), daemon=True
    )
    model.start()
    loop = asyncio.get_running_loop()
    base_url = await loop.run_in_executor(None, parent.recv)
    # The default aiohttp pool (100 connections) would queue the model calls.
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    provider = OpenAICompatibleProvider(
        base_url, "bench-model", "sk-bench", session=session, max_retries=0
    )
    try:
        async with running_server(
            catalog=catalog,
            llm=provider,
            engine_settings=EngineSettings(tool_timeout=30.0),
            max_concurrent_rpcs=n + 10,
        ) as srv:
            peak = [0]
            stop = asyncio.Event()
            sampler = asyncio.create_task(sample_rss(peak, stop))
            started = time.perf_counter()
            calls = [srv.stub.AnalyzeIncident(request(i), timeout=120) for i in range(n)]
            outcomes: list[Any] = await asyncio.gather(*calls, return_exceptions=True)
            wall = time.perf_counter() - started
            stop.set()
            await sampler
    finally:
        await session.close()
        parent.send("done")
        served = await loop.run_in_executor(None, parent.recv)
        model.join(10)

    selected = sum(
        1
        for o in outcomes
        if not isinstance(o, BaseException)
        and o.result.selected_workflow.workflow_id
        and not o.result.needs_human_review
    )
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    ideal = TURNS * turn_seconds
    print(f"concurrent AnalyzeIncident calls: {n}")
    print(f"succeeded with a validated selection: {selected}/{n}; errors: {len(errors)}")
    if errors:
        print(f"first error: {errors[0]!r}")
    print(f"model requests served: {served} (expected {n * TURNS})")
    print(
        f"wall time: {wall:.2f} s for {TURNS} turns x {turn_seconds:g} s ="
        f" {ideal:g} s ideal (overhead {wall - ideal:+.2f} s)"
    )
    print(f"peak RSS of the service process (server + client): {peak[0] / 2**20:.0f} MiB")
    return 0 if selected == n else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="concurrent calls (default 1000)")
    parser.add_argument("--turn-seconds", type=float, default=2.0)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.n, args.turn_seconds)))
