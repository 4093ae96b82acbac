"""What the libraries under the service cost on their own, with nothing of ours.

Run: python bench/bench_floors.py [--n 1000]

The alert-storm benchmark (`bench_concurrent_investigations.py`) holds
1,000 gRPC calls open, each waiting on model requests over aiohttp. This one
measures the floor of that shape on the same machine:

- gRPC: a bare `grpc.aio` server whose handler sleeps 1 s, N concurrent
  unary calls over 8 channels from another process, three rounds: server
  CPU per call and RSS growth per call held open.
- aiohttp: one `ClientSession` (pool of N, as the service configures it)
  POSTing a 7 kB JSON body, N at once, to an aiohttp server in another
  process that answers after 1 s: client CPU per request (new connections
  in the first round, pooled after) and RSS growth per request in flight.

An investigation is one gRPC call and three model requests, so these floors
bound what any change to the service's own code can win. Other benchmarks read
their figures against them in the same run: `measure_apart(n)` returns the
`Floors` (the storm benchmark's targets are ratios to them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection

import aiohttp
import grpc
import psutil
from aiohttp import web
from grpc_health.v1 import health_pb2, health_pb2_grpc

CHANNELS = 8
ROUNDS = 3
HOLD_SECONDS = 1.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class SlowHealth(health_pb2_grpc.HealthServicer):
    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        await asyncio.sleep(HOLD_SECONDS)
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


def grpc_client(port: int, n: int) -> None:
    async def run() -> None:
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(CHANNELS)]
        stubs = [health_pb2_grpc.HealthStub(c) for c in channels]
        for _ in range(ROUNDS):
            calls = [
                stubs[i % CHANNELS].Check(health_pb2.HealthCheckRequest(), timeout=60)
                for i in range(n)
            ]
            await asyncio.gather(*calls)
        for channel in channels:
            await channel.close()

    asyncio.run(run())


async def grpc_floor(n: int) -> tuple[float, float]:
    """Server CPU (µs) per call and RSS (kB) per call held open."""
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(SlowHealth(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    process = psutil.Process()
    await asyncio.sleep(0.3)
    idle, peak = process.memory_info().rss, 0
    cpu = cpu_seconds()
    client = multiprocessing.get_context("spawn").Process(target=grpc_client, args=(port, n))
    client.start()
    while client.is_alive():
        peak = max(peak, process.memory_info().rss)
        await asyncio.sleep(0.05)
    cpu = cpu_seconds() - cpu
    await server.stop(None)
    return cpu / (ROUNDS * n) * 1e6, (peak - idle) / n / 1e3


def slow_model(conn: Connection) -> None:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        await asyncio.sleep(HOLD_SECONDS)
        return web.json_response({"choices": [{"message": {"content": "x" * 600}}]})

    async def run() -> None:
        app = web.Application()
        app.router.add_post("/", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        conn.send(runner.addresses[0][1])
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        await runner.cleanup()

    asyncio.run(run())


async def aiohttp_floor(n: int) -> tuple[list[float], float]:
    """Client CPU (µs) per request for each round and RSS (kB) per request in flight."""
    parent, child = multiprocessing.Pipe()
    model = multiprocessing.get_context("spawn").Process(target=slow_model, args=(child,))
    model.start()
    port = parent.recv()
    body = json.dumps({"messages": [{"role": "user", "content": "z" * 7000}]}).encode()
    process = psutil.Process()
    idle, peak = process.memory_info().rss, 0
    per_round = []
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=n), cookie_jar=aiohttp.DummyCookieJar()
    ) as session:

        async def post() -> bytes:
            async with session.post(
                f"http://127.0.0.1:{port}/", data=body, headers={"Content-Type": "application/json"}
            ) as response:
                return await response.read()

        async def sample(stop: asyncio.Event) -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, process.memory_info().rss)
                await asyncio.sleep(0.05)

        for _ in range(ROUNDS):
            stop = asyncio.Event()
            sampler = asyncio.create_task(sample(stop))
            cpu = cpu_seconds()
            await asyncio.gather(*[post() for _ in range(n)])
            per_round.append((cpu_seconds() - cpu) / n * 1e6)
            stop.set()
            await sampler
    parent.send("done")
    model.join(10)
    return per_round, (peak - idle) / n / 1e3


@dataclass(frozen=True)
class Floors:
    """The libraries' cost, measured once: what an investigation costs before our code."""

    n: int
    grpc_cpu_us: float  # server CPU per call held open
    grpc_kb: float  # RSS per call held open
    aiohttp_cpu_us: tuple[float, ...]  # client CPU per request, per round (new connections first)
    aiohttp_kb: float  # RSS per request in flight

    @property
    def aiohttp_pooled_us(self) -> float:
        return min(self.aiohttp_cpu_us[1:])

    def investigation_cpu_us(self, model_requests: int = 3) -> float:
        """One call held open and its model requests, the first on a new connection."""
        pooled = (model_requests - 1) * self.aiohttp_pooled_us
        return self.grpc_cpu_us + self.aiohttp_cpu_us[0] + pooled

    def investigation_kb(self) -> float:
        """One call held open and one model request in flight (an investigation's turns
        are sequential)."""
        return self.grpc_kb + self.aiohttp_kb

    @classmethod
    def mean(cls, *measured: Floors) -> Floors:
        """The floors of several measurements, figure by figure."""

        def avg(values: Iterable[float]) -> float:
            values = list(values)
            return sum(values) / len(values)

        return cls(
            measured[0].n,
            avg(f.grpc_cpu_us for f in measured),
            avg(f.grpc_kb for f in measured),
            tuple(avg(r) for r in zip(*(f.aiohttp_cpu_us for f in measured), strict=True)),
            avg(f.aiohttp_kb for f in measured),
        )

    def lines(self, model_requests: int = 3) -> list[str]:
        return [
            f"grpc.aio unary, {self.n} held open over {CHANNELS} channels:"
            f" {self.grpc_cpu_us:.0f} µs server CPU per call,"
            f" {self.grpc_kb:.1f} kB RSS per call open",
            f"aiohttp POST of 7 kB JSON, {self.n} at once: {self.aiohttp_cpu_us[0]:.0f} µs"
            f" client CPU per request on new connections, {self.aiohttp_pooled_us:.0f} µs pooled;"
            f" {self.aiohttp_kb:.1f} kB RSS per request in flight",
            f"floor of one investigation (1 call, {model_requests} model requests):"
            f" {self.investigation_cpu_us(model_requests) / 1e3:.2f} ms CPU,"
            f" {self.investigation_kb():.1f} kB RSS while it waits",
        ]


def measure(n: int) -> Floors:
    grpc_cpu, grpc_kb = asyncio.run(grpc_floor(n))
    rounds, aio_kb = asyncio.run(aiohttp_floor(n))
    return Floors(n, grpc_cpu, grpc_kb, tuple(rounds), aio_kb)


def _measure_into(conn: Connection, n: int) -> None:
    conn.send(measure(n))


def measure_apart(n: int) -> Floors:
    """`measure` in a fresh process, so that nothing its caller imported or allocated
    (another benchmark's channels, the memory its allocator already holds) is counted
    or hides growth. Other benchmarks call this to read their figures against the
    floors of the same run."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_measure_into, args=(child, n))
    process.start()
    try:
        floors: Floors = parent.recv()
    finally:
        process.join(30)
    return floors


def main(n: int) -> None:
    started = time.perf_counter()
    floors = measure(n)
    print("\n".join(floors.lines()) + f" ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="concurrent calls (default 1000)")
    main(parser.parse_args().n)
