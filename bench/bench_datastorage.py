"""Data Storage adapter figures: cache-hit latency, fail-fast latency, throughput.

Run: .venv/bin/python bench/bench_datastorage.py [--requests N]

The REST server runs in a child process (so client and server do not share
one event loop): the real `hapi_grpc.adapters.datastorage_server` over the
bundled `EmbeddedCatalog` when importable, else a minimal stand-in that
answers the contract with a fixed payload. The script says which it used.

Targets: cache-hit search p50 < 50 us.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from hapi_grpc.adapters.cache import CatalogCache
from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.domain.catalog import SearchFilters, SearchQuery
from hapi_grpc.domain.errors import CatalogUnavailableError

QUERY = SearchQuery(
    query="OOMKilled critical",
    filters=SearchFilters(
        signal_type="OOMKilled",
        severity="critical",
        custom_labels={"constraint": ("cost-constrained",)},
    ),
    top_k=5,
)
CACHE_HIT_TARGET_P50_US = 50.0


def _serve(port: int, ready: Any) -> None:
    """Child process: serve the catalog on 127.0.0.1:port."""
    from aiohttp import web

    try:
        from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
        from hapi_grpc.adapters.datastorage_server import create_app

        app = create_app(EmbeddedCatalog.from_file(None))
        kind = "real datastorage_server + EmbeddedCatalog (bundled catalog)"
    except ImportError:
        app = _stand_in_app()
        kind = "stand-in server (datastorage_server not importable)"

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        ready.send(kind)
        await asyncio.Event().wait()  # until the parent terminates us

    asyncio.run(main())


def _stand_in_app() -> Any:
    from aiohttp import web

    hit = {
        "workflow_id": "oomkill-increase-memory-v1",
        "version": "1.0.0",
        "title": "OOMKill remediation - increase memory limit",
        "signal_type": "OOMKilled",
        "confidence": 0.92,
    }

    async def search(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"workflows": [hit], "total_results": 1})

    app = web.Application()
    app.router.add_post("/api/v1/workflows/search", search)
    return app


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _latencies(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    """Per-call latency in microseconds."""
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter_ns()
        try:
            await fn()
        except CatalogUnavailableError:
            pass
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


async def bench(url: str, requests: int) -> bool:
    """Prints the figures; True when the cache-hit target is met."""
    # 1. Cache hits (memory backend). Several rounds: the machine is shared,
    # and the spread between rounds shows how much of a figure is noise.
    cache = CatalogCache()
    cached = DataStorageCatalog(DataStorageClient(url), cache=cache)
    await cached.search(QUERY)
    await _latencies(lambda: cached.search(QUERY), 1000)  # warm-up
    rounds = [await _latencies(lambda: cached.search(QUERY), 5000) for _ in range(5)]
    hits = [sample for round_ in rounds for sample in round_]
    p50 = statistics.median(hits)
    verdict = "OK" if p50 < CACHE_HIT_TARGET_P50_US else "MISSED"
    print(
        f"cache-hit search latency: p50 {p50:.1f} us, p99 {_percentile(hits, 0.99):.1f} us "
        f"(target p50 < {CACHE_HIT_TARGET_P50_US:.0f} us: {verdict}); per-round p50: "
        + ", ".join(f"{statistics.median(r):.1f}" for r in rounds)
    )
    await cached.close()
    await cache.close()

    # 2. Open breaker: fail fast without a request.
    breaker = RateCircuitBreaker("bench", min_calls=1, recovery_timeout=3600)

    async def boom() -> None:
        raise CatalogUnavailableError("forced")

    try:
        await breaker.call(boom)
    except CatalogUnavailableError:
        pass
    assert breaker.state == "open"
    guarded = DataStorageCatalog(DataStorageClient(url, breaker=breaker))
    fast = await _latencies(lambda: guarded.search(QUERY), 20_000)
    print(
        f"open-breaker fail-fast latency: p50 {statistics.median(fast):.1f} us, "
        f"p99 {_percentile(fast, 0.99):.1f} us"
    )
    await guarded.close()

    # 3. Throughput over HTTP, no cache.
    plain = DataStorageCatalog(DataStorageClient(url, breaker=RateCircuitBreaker("bench-plain")))
    for _ in range(50):
        await plain.search(QUERY)  # warm the connection pool
    start = time.perf_counter()
    for _ in range(requests):
        await plain.search(QUERY)
    sequential = requests / (time.perf_counter() - start)

    async def worker(n: int) -> None:
        for _ in range(n):
            await plain.search(QUERY)

    concurrency = 20
    per_worker = max(1, requests // concurrency)
    start = time.perf_counter()
    await asyncio.gather(*(worker(per_worker) for _ in range(concurrency)))
    concurrent = per_worker * concurrency / (time.perf_counter() - start)
    print(
        f"adapter throughput (search, no cache): sequential {sequential:.0f} req/s, "
        f"concurrency {concurrency} {concurrent:.0f} req/s ({requests} requests each)"
    )
    await plain.close()
    return p50 < CACHE_HIT_TARGET_P50_US


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # keep the figures readable

    port = _free_port()
    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(port, send), daemon=True
    )
    server.start()
    try:
        if not receive.poll(30):
            raise SystemExit("the catalog server did not start within 30 s")
        print(f"server: {receive.recv()} on 127.0.0.1:{port}")
        met = asyncio.run(bench(f"http://127.0.0.1:{port}", args.requests))
    finally:
        server.terminate()
        server.join(10)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
