"""The full reliability run: thousands of hostile or unlucky calls against `hapi-grpc serve`.

Run: python bench/reliability.py [--soak-seconds 300] [--payloads 500] [--cancel-calls 500] ...

Same categories and pass rules as `tests/reliability/` (code in
`tests/fakes/reliability*.py`), sized for minutes instead of seconds: boundary
messages, random and mutated payloads on every method, Data Storage and model
faults (hang, 5xx, 429 with Retry-After, garbage, 50 MB body, connection reset,
kill and restart), concurrent calls with half cancelled, a soak of mixed
traffic, then SIGTERM under load with the shipped grace against a model slow
enough that investigations outlast it. Prints per category tried / passed /
failed and the answers seen, RSS and open fds of the server process at start and
end, and every broken rule with what the server did. Exits 1 when a rule broke.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes

from tests.fakes.reliability import FD_GROWTH_BOUND, RSS_GROWTH_BOUND, MiB, Report, Sizes
from tests.fakes.reliability_runs import run_all, run_sigterm


async def main(sizes: Sizes, sigterm: bool) -> int:
    report = Report()
    started = time.monotonic()
    await run_all(report, sizes)
    if sigterm:
        await run_sigterm(report, sizes)
    print(report.table())
    print(
        f"\nbounds: RSS end <= start + {RSS_GROWTH_BOUND // MiB} MiB, open fds end <= start"
        f" + {FD_GROWTH_BOUND} (start = after a warm-up of 4 valid calls)"
    )
    tried = sum(c.tried for c in report.categories.values())
    print(f"{tried} checks in {time.monotonic() - started:.0f}s; seed {sizes.seed}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--soak-seconds", type=float, default=300.0)
    parser.add_argument("--soak-concurrency", type=int, default=32)
    parser.add_argument("--payloads", type=int, default=500, help="random/mutated per method")
    parser.add_argument("--fault-calls", type=int, default=10, help="calls per fault")
    parser.add_argument("--fault-deadline", type=float, default=5.0)
    parser.add_argument("--cancel-calls", type=int, default=500)
    parser.add_argument("--sigterm-calls", type=int, default=200)
    parser.add_argument(
        "--sigterm-turn-seconds",
        type=float,
        default=15.0,
        help="model turn time in the SIGTERM run (3 turns: 45 s outlasts the 30 s grace)",
    )
    parser.add_argument("--no-sigterm", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    run_sizes = Sizes(
        payloads_per_method=args.payloads,
        fault_calls=args.fault_calls,
        fault_deadline=args.fault_deadline,
        cancel_calls=args.cancel_calls,
        soak_seconds=args.soak_seconds,
        soak_concurrency=args.soak_concurrency,
        sigterm_calls=args.sigterm_calls,
        sigterm_turn_seconds=args.sigterm_turn_seconds,
        seed=args.seed,
    )
    sys.exit(asyncio.run(main(run_sizes, not args.no_sigterm)))
