"""gRPC unary throughput: the raw baseline (health Check) next to
ValidateWorkflowParameters with the schema cached, measured in one run against
a real server process. Prints requests/s and p50/p99 per concurrency level.

Target (issue: parameter validation): ValidateWorkflowParameters >= 80% of the
baseline's throughput at the same concurrency.

Client and server share this machine's cores, and a few seconds of load are
easily disturbed by the rest of the machine. So each level runs `--rounds`
pairs of rounds, alternating baseline and validation, and compares the
median round of each; the spread of the per-pair ratios is printed too.

    .venv/bin/python bench/bench_grpc_unary.py [--requests 2000] [--rounds 9]
                                               [--concurrency 1,16,64]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import server_process

from hapi.v1 import service_pb2_grpc, validation_pb2

TARGET = 0.80


def _validate_request() -> validation_pb2.ValidateWorkflowParametersRequest:
    request = validation_pb2.ValidateWorkflowParametersRequest(
        workflow_id="oomkill-increase-memory-v1"
    )
    request.parameters.update(
        {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
    )
    return request


async def _load(
    call: Callable[[], Awaitable[object]], requests: int, concurrency: int
) -> tuple[float, list[float]]:
    """Run `requests` calls from `concurrency` workers; requests/s and latencies."""
    latencies: list[float] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return requests / (time.perf_counter() - started), latencies


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else 0.0


class _Series:
    """The rounds of one target at one concurrency level."""

    def __init__(self) -> None:
        self.rates: list[float] = []
        self.latencies: list[float] = []

    def add(self, rate: float, latencies: list[float]) -> None:
        self.rates.append(rate)
        self.latencies.extend(latencies)

    @property
    def rate(self) -> float:
        return statistics.median(self.rates)

    def row(self, name: str, conc: int, share: float) -> str:
        return (
            f"{name:<28}{conc:>6}{self.rate:>10.0f}"
            f"{_pct(self.latencies, 50):>9.2f}{_pct(self.latencies, 99):>9.2f}{share:>8.0%}"
        )


async def run(address: str, requests: int, rounds: int, levels: list[int]) -> bool:
    ok = True
    async with grpc.aio.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
        check = health_pb2.HealthCheckRequest()
        validate = _validate_request()

        def baseline() -> Awaitable[object]:
            return health.Check(check, timeout=10)

        def validation() -> Awaitable[object]:
            return stub.ValidateWorkflowParameters(validate, timeout=10)

        # Warm the schema cache, the connection and both code paths.
        await _load(validation, 500, 8)
        await _load(baseline, 500, 8)
        print(
            f"{'target':<28}{'conc':>6}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'% base':>9}"
            "   per-pair ratio min-max"
        )
        for conc in levels:
            base, val = _Series(), _Series()
            for _ in range(rounds):
                base.add(*await _load(baseline, requests, conc))
                val.add(*await _load(validation, requests, conc))
            share = val.rate / base.rate
            pairs = [v / b for b, v in zip(base.rates, val.rates, strict=True)]
            print(base.row("health.Check (baseline)", conc, 1.0))
            spread = f"{min(pairs):.0%}-{max(pairs):.0%}"
            print(f"{val.row('ValidateWorkflowParameters', conc, share)}   {spread}")
            ok &= share >= TARGET
    verdict = "PASS" if ok else "BELOW"
    print(f"target: ValidateWorkflowParameters >= {TARGET:.0%} of baseline -> {verdict}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=9, help="round pairs per level")
    parser.add_argument("--concurrency", default="1,16,64")
    args = parser.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    with server_process() as address:
        ok = asyncio.run(run(address, args.requests, args.rounds, levels))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
