"""Resident memory under sustained mixed traffic: it must plateau.

Run: python bench/bench_soak_memory.py [--seconds 300] [--concurrency 16] [--scaled]

Starts `hapi-grpc serve` against a fake Data Storage and a fake model (the
reliability suite's harness) and sends mixed traffic for `--seconds`:
analyses and streams, validations, hostile payloads, cancelled analyses and
outcome reports, every call with fresh ids (tests/fakes/soak.py). Prints the
server's RSS as calls complete and exits 1 unless memory plateaus: the
second half of the run grows per call by at most a tenth of what the first
half grew (the stores filling to their bounds), or by at most 6 MiB.

At the shipped bounds the stores fill within about five minutes of this
traffic on 2 cores; `--scaled` sets each store's bound to 1 MiB so that a
one-minute run shows the plateau (what is left then is what nothing bounds).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes

from tests.fakes.reliability import Harness
from tests.fakes.soak import MiB, soak

SCALED = {
    "HAPI_RESULT_MAX_BYTES": str(1 << 20),
    "HAPI_HISTORY_MAX_BYTES": str(1 << 20),
    "HAPI_HISTORY_MAX_DECISION_BYTES": str(1 << 20),
    "HAPI_CACHE_MAX_BYTES": str(1 << 20),  # the fake model's every search is new
}


async def main(seconds: float, concurrency: int, scaled: bool) -> int:
    async with Harness(**(SCALED if scaled else {})) as h:
        await soak(h, 10, concurrency=8, samples=5)  # imports, pools, first-call caches
        result = await soak(h, seconds, concurrency=concurrency, samples=60)
    print(f"{'calls':>8} {'RSS MiB':>8}")
    for sample in result.samples[:: max(len(result.samples) // 20, 1)]:
        print(f"{sample.calls:>8} {sample.rss / MiB:>8.1f}")
    print("answers:", ", ".join(f"{k} {v}" for k, v in sorted(result.codes.items())))
    print(result.summary())
    return 0 if result.plateaued() else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--scaled", action="store_true", help="1 MiB per store")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.seconds, args.concurrency, args.scaled)))
