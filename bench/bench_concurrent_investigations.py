"""An alert storm: N concurrent AnalyzeIncident calls, a model that takes 2 s per turn.

Run: python bench/bench_concurrent_investigations.py [--n 1000] [--turn-seconds 2]

`hapi-grpc serve` runs as shipped (`bench/_server.py`): its default settings,
with only what a user must set for a language model (provider, base URL,
model, key) pointing at a `ScriptedLLMServer`, whose every reply takes
`--turn-seconds` (`bench/_storm.py`). The model runs in a child process, so
its work is not counted as the service's, and the calls come over 8 real gRPC
channels from this process. Each investigation takes 3 turns (search,
validate, answer), so the ideal wall time is 3 x turn-seconds.

Targets, read against the libraries' floors measured in the same run
(`bench_floors.measure_apart`, in a process of its own, before and after the
storm; the mean of the two):
- all N end with their decision;
- wall <= 1.3 x the ideal;
- the server's CPU per investigation (user + system over the storm, / N)
  <= 3 x the floor's (a bare grpc.aio call held open, one aiohttp request on a
  new connection and two pooled). The server's figure includes its own use of
  those libraries, so the service's code has up to twice the floor;
- its memory per investigation ((peak - idle RSS) / N) <= 2 x the floor's (a
  call held open and one request in flight);
- idle RSS <= 100 MB.
Each ratio is printed with its numerator and denominator, with the host's
load average; the exit status is 1 when one is missed. The host's cores are
shared: read a run together with its load, and repeat a run made under load.

`--max-concurrent-rpcs` and `--llm-max-concurrent-requests` exist only to
measure memory beyond the defaults (how the default cap was sized); leave
them out to measure the server as shipped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _storm import TURNS, Storm, run_storm
from bench_floors import Floors, measure_apart

WALL_RATIO = 1.3  # to the ideal: turns x the model's latency
CPU_RATIO = 3.0  # server CPU per investigation, to the libraries' floor
MEMORY_RATIO = 2.0  # server memory per investigation, to the libraries' floor
IDLE_RSS_MB = 100


def ratio_lines(storm: Storm, floors: Floors) -> list[tuple[str, bool]]:
    """Each target with its numerator and denominator, and whether it is met."""
    cpu_floor = floors.investigation_cpu_us(TURNS)
    kb_floor = floors.investigation_kb()
    wall, cpu, kb = (
        storm.wall / storm.ideal,
        storm.cpu_per_investigation_us / cpu_floor,
        storm.kb_per_investigation / kb_floor,
    )
    idle_mb = storm.idle_rss / 1e6

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    return [
        (
            f"decided: {storm.decided()}/{storm.n} (target: all)",
            storm.decided() == storm.n,
        ),
        (
            f"wall: {storm.wall:.2f} s / ideal {storm.ideal:g} s ({TURNS} turns x"
            f" {storm.turn_seconds:g} s) = {wall:.2f}x (target <= {WALL_RATIO}x):"
            f" {verdict(wall <= WALL_RATIO)}",
            wall <= WALL_RATIO,
        ),
        (
            f"CPU per investigation: server {storm.cpu_per_investigation_us / 1e3:.2f} ms /"
            f" floor {cpu_floor / 1e3:.2f} ms (gRPC call {floors.grpc_cpu_us:.0f} µs + aiohttp"
            f" {floors.aiohttp_cpu_us[0]:.0f} µs new + {TURNS - 1} x"
            f" {floors.aiohttp_pooled_us:.0f} µs pooled) = {cpu:.2f}x"
            f" (target <= {CPU_RATIO}x): {verdict(cpu <= CPU_RATIO)}",
            cpu <= CPU_RATIO,
        ),
        (
            f"memory per investigation: server {storm.kb_per_investigation:.1f} kB"
            f" ((peak - idle) / {storm.n}) / floor {kb_floor:.1f} kB (gRPC call"
            f" {floors.grpc_kb:.1f} kB + aiohttp request {floors.aiohttp_kb:.1f} kB) ="
            f" {kb:.2f}x (target <= {MEMORY_RATIO}x): {verdict(kb <= MEMORY_RATIO)}",
            kb <= MEMORY_RATIO,
        ),
        (
            f"idle RSS: {idle_mb:.1f} MB (target <= {IDLE_RSS_MB} MB):"
            f" {verdict(idle_mb <= IDLE_RSS_MB)}",
            idle_mb <= IDLE_RSS_MB,
        ),
    ]


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main(n: int, turn_seconds: float, extra_env: dict[str, str]) -> int:
    print(f"host: {psutil.cpu_count()} cores, {load()} at the start")
    before = measure_apart(n)
    print("floors before the storm (bench_floors.py):")
    print("\n".join(f"  {line}" for line in before.lines(TURNS)))
    result = run_storm(n, turn_seconds, extra_env)
    print(f"storm ({load()} at its end):")
    print("\n".join(f"  {line}" for line in result.lines()))
    after = measure_apart(n)
    print("floors after the storm:")
    print("\n".join(f"  {line}" for line in after.lines(TURNS)))
    floors = Floors.mean(before, after)
    print(f"targets, against the mean of the floors before and after ({load()} at the end):")
    checks = ratio_lines(result, floors)
    print("\n".join(f"  {line}" for line, _ in checks))
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="concurrent calls (default 1000)")
    parser.add_argument("--turn-seconds", type=float, default=2.0)
    parser.add_argument(
        "--max-concurrent-rpcs", help="HAPI_MAX_CONCURRENT_RPCS (memory sizing only)"
    )
    parser.add_argument(
        "--llm-max-concurrent-requests",
        help="HAPI_LLM_MAX_CONCURRENT_REQUESTS (memory sizing only)",
    )
    args = parser.parse_args()
    extra = {}
    if args.max_concurrent_rpcs:
        extra["HAPI_MAX_CONCURRENT_RPCS"] = args.max_concurrent_rpcs
    if args.llm_max_concurrent_requests:
        extra["HAPI_LLM_MAX_CONCURRENT_REQUESTS"] = args.llm_max_concurrent_requests
    sys.exit(main(args.n, args.turn_seconds, extra))
