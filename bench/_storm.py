"""Shared by the storm benchmarks: N concurrent AnalyzeIncident calls against a
fresh `hapi-grpc serve`, a scripted model that takes `turn_seconds` per turn.

The server runs as shipped (`_server.launched_server`): its default settings,
with only what a user must set for a language model (provider, base URL,
model, key) pointing at a `ScriptedLLMServer`. The model runs in a child
process, so its work is not counted as the service's, and the calls come over
real gRPC channels from the calling process. Each investigation takes 3 turns
(search, validate, answer), so the ideal wall time is 3 x turn_seconds.
`run_storm` returns what it measured of the server (`Storm`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import multiprocessing
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes
from _server import launched_server

from hapi.v1 import analysis_pb2, incident_pb2, service_pb2, service_pb2_grpc
from tests.fakes.scripted_llm import ScriptedLLMServer, Step

TURNS = 3
CHANNELS = 8
# Entered with the server's pid while the calls are under way (see `run_storm`).
Around = Callable[[int], AbstractContextManager[object]]
# Called with the storm's start (`time.perf_counter()`) once the calls have ended;
# returns when the work they left behind is done, so its CPU is counted too.
Settle = Callable[[float], None]
PARAMS = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
ANSWER = {
    "analysis_summary": "payment-api is OOMKilled repeatedly",
    "root_cause_assessment": "memory limit below the working set",
    "rca_severity": "critical",
    # The validation tool answers that automation is refused (nothing was read from a
    # cluster, so the workflow's preconditions are not shown); a model then stands down.
    "selected_workflow": None,
    "alternative_workflows": [
        {"workflow_id": "oomkill-increase-memory-v1", "confidence": 0.9, "rationale": "fits"}
    ],
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


def serve_model(conn: Connection, turn_seconds: float) -> None:
    """Child process: the scripted model, on its own event loop."""
    logging.disable(logging.WARNING)

    async def run() -> None:
        steps = script(turn_seconds)
        async with ScriptedLLMServer("openai", script_for=lambda _: steps) as server:
            conn.send(server.base_url)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, conn.recv)  # until the parent is done
            conn.send(arrivals(server, turn_seconds))

    asyncio.run(run())


def arrivals(server: ScriptedLLMServer, turn_seconds: float) -> dict[str, float]:
    """Where the wall time went, seen from the model: when turns arrived."""
    turns: dict[str, list[float]] = collections.defaultdict(list)
    for recorded in server.requests:
        turns[recorded.conversation].append(recorded.received_at)
    firsts = sorted(times[0] for times in turns.values())
    gaps = [b - a - turn_seconds for times in turns.values() for a, b in itertools.pairwise(times)]
    gaps.sort()
    return {
        "requests": len(server.requests),
        "first_turn_spread": firsts[-1] - firsts[0] if firsts else 0.0,
        "gap_p50": gaps[len(gaps) // 2] if gaps else 0.0,
        "gap_max": gaps[-1] if gaps else 0.0,
    }


async def sample_rss(process: psutil.Process, peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():  # ends when the storm does
        peak[0] = max(peak[0], process.memory_info().rss)
        try:
            await asyncio.wait_for(stop.wait(), 0.05)
        except TimeoutError:
            pass


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


@dataclass
class Storm:
    """What one storm measured of the served process and beside it."""

    n: int
    turn_seconds: float
    settings: list[str]
    outcomes: list[Any]
    wall: float
    idle_rss: int
    peak_rss: int
    cpu: float  # the server's, user + system, over the storm
    callers_cpu: float
    model_cpu: float
    served: dict[str, float] = field(default_factory=dict)

    @property
    def ideal(self) -> float:
        return TURNS * self.turn_seconds

    @property
    def cpu_per_investigation_us(self) -> float:
        return self.cpu / max(self.n, 1) * 1e6

    @property
    def kb_per_investigation(self) -> float:
        return (self.peak_rss - self.idle_rss) / max(self.n, 1) / 1e3

    def decided(self) -> int:
        """Validated selections, plus reviews because the workflow's premise was not shown:
        nothing is read from a cluster here, so the scripted model's workflow is refused
        (PRECONDITION_NOT_MET) and it stands down, the end this storm is expected to reach."""
        ok = [o for o in self.outcomes if not isinstance(o, BaseException)]
        return sum(
            1
            for o in ok
            if (o.result.selected_workflow.workflow_id and not o.result.needs_human_review)
            or o.result.human_review_reason == analysis_pb2.HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET
        )

    def lines(self) -> list[str]:
        codes = collections.Counter(
            o.code().name if isinstance(o, grpc.aio.AioRpcError) else type(o).__name__
            for o in self.outcomes
            if isinstance(o, BaseException)
        )
        reviews = collections.Counter(
            o.result.human_review_reason
            for o in self.outcomes
            if not isinstance(o, BaseException) and o.result.needs_human_review
        )
        spread, p50, top = (
            self.served.get(k, 0.0) for k in ("first_turn_spread", "gap_p50", "gap_max")
        )
        out = [
            f"server: hapi-grpc serve, defaults + {self.settings}",
            f"concurrent AnalyzeIncident calls: {self.n} over {CHANNELS} channels",
            f"completed with a decision (validated selection, or review because the"
            f" workflow's premise was not shown): {self.decided()}/{self.n}",
        ]
        if codes:
            out.append(f"errors by code: {dict(codes)}")
        if reviews:
            out.append(f"human review (reason enum value: count): {dict(reviews)}")
        out += [
            f"model requests served: {self.served.get('requests', 0):.0f}"
            f" (expected {self.n * TURNS})",
            f"seen from the model: first turns arrived over {spread:.2f} s; server time"
            f" between a reply and the next turn: p50 {p50:.2f} s, max {top:.2f} s",
            f"wall time: {self.wall:.2f} s; server RSS {self.idle_rss / 1e6:.1f} MB idle,"
            f" {self.peak_rss / 1e6:.1f} MB peak; server CPU {self.cpu:.2f} s",
            # The host's cores are shared: the callers and the scripted model compete with
            # the server for them, and a wall time above the ideal may be theirs.
            f"host CPU beside the server: callers {self.callers_cpu:.2f} s, scripted model"
            f" {self.model_cpu:.2f} s ({psutil.cpu_count()} cores)",
        ]
        return out


async def storm(
    address: str, pid: int, n: int, around: Around | None, settle: Settle | None = None
) -> tuple[list[Any], float, int, int, float]:
    process = psutil.Process(pid)
    idle_rss = process.memory_info().rss
    channels = [grpc.aio.insecure_channel(address) for _ in range(CHANNELS)]
    try:
        stubs = [service_pb2_grpc.IncidentAnalysisServiceStub(c) for c in channels]
        for channel in channels:
            await asyncio.wait_for(channel.channel_ready(), 10)
        peak = [idle_rss]
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample_rss(process, peak, stop))
        with around(pid) if around else contextlib.nullcontext():
            cpu_before = cpu_seconds(process)
            started = time.perf_counter()
            calls = [stubs[i % CHANNELS].AnalyzeIncident(request(i), timeout=120) for i in range(n)]
            outcomes: list[Any] = await asyncio.gather(*calls, return_exceptions=True)
            wall = time.perf_counter() - started
            if settle is not None:  # work the calls left behind (a writer's backlog) counts
                await asyncio.to_thread(settle, started)
            cpu = cpu_seconds(process) - cpu_before
        stop.set()
        await sampler
    finally:
        for channel in channels:
            await channel.close()
    return outcomes, wall, idle_rss, peak[0], cpu


def run_storm(
    n: int,
    turn_seconds: float,
    extra_env: Mapping[str, str] | None = None,
    around: Around | None = None,
    settle: Settle | None = None,
) -> Storm:
    """One storm against a fresh `hapi-grpc serve`: its shipped defaults, the model
    settings and `extra_env`. `around(pid)` is entered just before the calls are made
    and left when the last has ended (other benches profile or time the server there);
    `settle` (see `Settle`) before the server's CPU is read."""
    logging.disable(logging.WARNING)
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    model = context.Process(target=serve_model, args=(child, turn_seconds), daemon=True)
    model.start()
    base_url = parent.recv()
    settings = {
        # What a user must set to use a language model; nothing else.
        "HAPI_LLM_PROVIDER": "openai",
        "HAPI_LLM_BASE_URL": base_url,
        "HAPI_LLM_MODEL": "bench-model",
        "HAPI_LLM_API_KEY": "sk-bench-key-0000",
        **(extra_env or {}),
    }
    model_cpu_before = cpu_seconds(psutil.Process(model.pid))
    own_cpu_before = cpu_seconds(psutil.Process())
    try:
        with launched_server(**settings) as server:
            outcomes, wall, idle_rss, peak_rss, cpu = asyncio.run(
                storm(server.address, server.pid, n, around, settle)
            )
        model_cpu = cpu_seconds(psutil.Process(model.pid)) - model_cpu_before
        own_cpu = cpu_seconds(psutil.Process()) - own_cpu_before
    finally:
        parent.send("done")
        served = parent.recv()
        model.join(10)
    names = sorted(k for k in settings if k.startswith("HAPI_"))
    return Storm(
        n, turn_seconds, names, outcomes, wall, idle_rss, peak_rss, cpu, own_cpu, model_cpu, served
    )
