"""Search latency of the bundled catalog: in process, and over the REST server.

Usage: python bench/bench_catalog_search.py [--iterations N] [--rest]

Target: under 1 ms mean per in-process search (and p50 over REST with --rest).
Exits 1 when it is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import aiohttp
from aiohttp import web

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.datastorage_server import create_app
from hapi_grpc.domain.catalog import SearchFilters, SearchQuery

QUERIES = [
    SearchQuery(query="OOMKilled critical"),
    SearchQuery(query="CrashLoopBackOff high liveness probe failing", top_k=10, min_score=0.0),
    SearchQuery(
        query="NodeNotReady critical",
        filters=SearchFilters(
            severity="critical",
            environment="production",
            custom_labels={"constraint": ("cost-constrained",), "team": ("name=payments",)},
            detected_labels={"gitOpsManaged": True, "pdbProtected": True},
        ),
    ),
    SearchQuery(query="increase memory limit for the api deployment", min_score=0.3),
    SearchQuery(query="banana bread"),
]


TARGET_US = 1000.0


def _report(label: str, samples: list[float]) -> tuple[float, float]:
    """Prints the figures; (mean, p50) in microseconds."""
    samples.sort()
    p50 = samples[len(samples) // 2]
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    print(
        f"{label:<22} n={len(samples):<6} mean={statistics.fmean(samples):8.1f} us  "
        f"p50={p50:8.1f} us  p99={p99:8.1f} us  max={samples[-1]:8.1f} us"
    )
    return statistics.fmean(samples), p50


def bench_in_process(catalog: EmbeddedCatalog, iterations: int) -> float:
    """Mean microseconds per in-process search."""
    samples: list[float] = []
    for _ in range(iterations):
        for query in QUERIES:
            start = time.perf_counter()
            catalog.search_sync(query)
            samples.append((time.perf_counter() - start) * 1e6)
    mean, _ = _report("in-process search", samples)
    start = time.perf_counter()
    EmbeddedCatalog.from_file(None)
    print(f"{'load bundled catalog':<22} {(time.perf_counter() - start) * 1e3:.1f} ms")
    return mean


async def bench_rest(catalog: EmbeddedCatalog, iterations: int) -> float:
    """p50 microseconds per REST round trip."""
    runner = web.AppRunner(create_app(catalog), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    url = f"http://{host}:{port}/api/v1/workflows/search"
    bodies = [query.to_wire() for query in QUERIES]
    samples: list[float] = []
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(iterations):
                for body in bodies:
                    start = time.perf_counter()
                    async with session.post(url, json=body) as response:
                        await response.read()
                    samples.append((time.perf_counter() - start) * 1e6)
    finally:
        await runner.cleanup()
    return _report("REST search round trip", samples)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--rest", action="store_true", help="also time the REST server")
    args = parser.parse_args()
    catalog = EmbeddedCatalog.from_file(None)
    print(f"bundled catalog: {len(catalog)} workflows, {len(QUERIES)} queries per iteration")
    figures = {"in-process mean": bench_in_process(catalog, args.iterations)}
    if args.rest:
        figures["REST p50"] = asyncio.run(bench_rest(catalog, max(1, args.iterations // 10)))
    met = all(us < TARGET_US for us in figures.values())
    shown = ", ".join(f"{name} {us:.0f} us" for name, us in figures.items())
    print(f"target < {TARGET_US:.0f} us: {shown}: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
