"""gRPC unary throughput: the raw baseline (health Check) next to
ValidateWorkflowParameters with the schema cached, measured in one run against
a real server process. Prints requests/s and p50/p99 per concurrency level.

Target (issue: parameter validation): ValidateWorkflowParameters >= 80% of the
baseline's throughput at the same concurrency.

    .venv/bin/python bench/bench_grpc_unary.py [--requests 4000] [--concurrency 1,16,64]
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


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000 if len(values) > 1 else 0.0


async def run(address: str, requests: int, levels: list[int]) -> bool:
    ok = True
    async with grpc.aio.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
        check = health_pb2.HealthCheckRequest()
        validate = _validate_request()
        await stub.ValidateWorkflowParameters(validate, timeout=10)  # warm the schema cache
        print(f"{'target':<28}{'conc':>6}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'% base':>9}")
        for conc in levels:
            base_rps, base_lat = await _load(
                lambda: health.Check(check, timeout=10), requests, conc
            )
            val_rps, val_lat = await _load(
                lambda: stub.ValidateWorkflowParameters(validate, timeout=10), requests, conc
            )
            share = val_rps / base_rps * 100
            print(
                f"{'health.Check (baseline)':<28}{conc:>6}{base_rps:>10.0f}"
                f"{_pct(base_lat, 50):>9.2f}{_pct(base_lat, 99):>9.2f}{100:>8.0f}%"
            )
            print(
                f"{'ValidateWorkflowParameters':<28}{conc:>6}{val_rps:>10.0f}"
                f"{_pct(val_lat, 50):>9.2f}{_pct(val_lat, 99):>9.2f}{share:>8.0f}%"
            )
            ok &= share >= 80
    print(f"target: ValidateWorkflowParameters >= 80% of baseline -> {'PASS' if ok else 'BELOW'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", default="1,16,64")
    args = parser.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    with server_process() as address:
        asyncio.run(run(address, args.requests, levels))


if __name__ == "__main__":
    main()
