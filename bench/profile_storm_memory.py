"""Where the alert storm's memory goes: snapshots of the server while the calls are held.

Run: python bench/profile_storm_memory.py [--n 1000] [--at 4,7,10] [--tracemalloc 1]
     [--turn-seconds 2]

Starts `hapi-grpc serve` exactly as `bench_concurrent_investigations.py`
does, with a `sitecustomize` hook (a temporary directory on PYTHONPATH) that
answers SIGUSR1 with a snapshot: `/proc/self/smaps_rollup`, the number of
live objects by type, and (with `--tracemalloc N`, which runs the server
under `PYTHONTRACEMALLOC=N`) a tracemalloc snapshot. One snapshot is taken
at idle, then one at each `--at` second of the storm. Printed for each: RSS
and anonymous memory, Python heap by package and by line (growth over
idle), and the object types that grew. tracemalloc slows the server several
times and adds its own memory: read its RSS only relative to the Python
heap, and take RSS figures from the benchmark itself. Diagnostic only: no
target, exit status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import multiprocessing
import os
import re
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import grpc
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes
import _storm as storm_bench
from _server import launched_server

from hapi.v1 import service_pb2_grpc

# Runs inside the server process only (it is put on that process's PYTHONPATH).
HOOK = """
import collections, gc, os, signal, tracemalloc
_taken = [0]
def _snapshot(signum, frame):
    _taken[0] += 1
    path = f"{os.environ['HAPI_PROFILE_OUT']}.{_taken[0]}"
    if tracemalloc.is_tracing():
        tracemalloc.take_snapshot().dump(path + ".tm")
    counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
    with open(path + ".tmp", "w") as out:
        out.write(open("/proc/self/smaps_rollup").read())
        out.writelines(f"{n} {name}\\n" for name, n in counts.items())
    os.rename(path + ".tmp", path + ".txt")
signal.signal(signal.SIGUSR1, _snapshot)
"""


def read_counts(path: str) -> tuple[dict[str, int], dict[str, int]]:
    """(smaps_rollup fields in kB, live objects by type) of one snapshot."""
    smaps: dict[str, int] = {}
    types: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        if m := re.fullmatch(r"(\w+):\s+(\d+) kB", line):
            smaps[m[1]] = int(m[2])
        elif m := re.fullmatch(r"(\d+) (\S+)", line):
            types[m[2]] = int(m[1])
    return smaps, types


def package(filename: str) -> str:
    m = re.search(r"site-packages/([^/]+)", filename) or re.search(r"(hapi_grpc/[^/]+)", filename)
    return m[1] if m else Path(filename).name


def report(out: str, taken: int, top: int) -> None:
    idle_smaps, idle_types = read_counts(f"{out}.1.txt")
    idle_tm = Path(f"{out}.1.tm")
    base = tracemalloc.Snapshot.load(str(idle_tm)) if idle_tm.exists() else None
    for k in range(1, taken + 1):
        smaps, types = read_counts(f"{out}.{k}.txt")
        print(f"\n== snapshot {k} ({'idle' if k == 1 else f'storm mark {k - 1}'})")
        print(
            f"RSS {smaps['Rss'] / 1e3:.1f} MB, anonymous {smaps['Anonymous'] / 1e3:.1f} MB"
            f" (+{(smaps['Anonymous'] - idle_smaps['Anonymous']) / 1e3:.1f} over idle)"
        )
        grown = sorted(((n - idle_types.get(t, 0), t) for t, n in types.items()), reverse=True)
        print("objects grown:", ", ".join(f"{t} +{d}" for d, t in grown[:15] if d > 0))
        if base is None or k == 1:
            continue
        diff = tracemalloc.Snapshot.load(f"{out}.{k}.tm").compare_to(base, "lineno")
        by_package: collections.Counter[str] = collections.Counter()
        for stat in diff:
            by_package[package(stat.traceback[0].filename)] += stat.size_diff
        total = sum(by_package.values())
        print(f"Python heap +{total / 1e6:.1f} MB over idle; by package:")
        for name, size in by_package.most_common(12):
            print(f"  {size / 1e3:9.1f} kB  {name}")
        print("by line:")
        for stat in diff[:top]:
            print(f"  {stat.size_diff / 1e3:9.1f} kB {stat.count_diff:7d}  {stat.traceback[0]}")


async def storm(address: str, pid: int, n: int, marks: list[float]) -> None:
    process = psutil.Process(pid)
    os.kill(pid, signal.SIGUSR1)  # idle
    channels = [grpc.aio.insecure_channel(address) for _ in range(storm_bench.CHANNELS)]
    stubs = [service_pb2_grpc.IncidentAnalysisServiceStub(c) for c in channels]
    for channel in channels:
        await asyncio.wait_for(channel.channel_ready(), 10)
    await asyncio.sleep(2)  # the idle snapshot is written before the storm starts
    started = time.perf_counter()

    async def marker() -> None:
        for mark in marks:
            await asyncio.sleep(max(0.0, started + mark - time.perf_counter()))
            print(f"mark {mark:g} s: RSS {process.memory_info().rss / 1e6:.1f} MB", flush=True)
            os.kill(pid, signal.SIGUSR1)

    marking = asyncio.create_task(marker())
    calls = [
        stubs[i % len(stubs)].AnalyzeIncident(storm_bench.request(i), timeout=600) for i in range(n)
    ]
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    failed = sum(isinstance(o, BaseException) for o in outcomes)
    print(f"storm: {n} calls, {failed} failed, {time.perf_counter() - started:.1f} s")
    await marking
    await asyncio.sleep(5)  # the last snapshot (tracemalloc's can take seconds)
    for channel in channels:
        await channel.close()


def main(n: int, marks: list[float], frames: int, top: int, turn_seconds: float) -> None:
    logging.disable(logging.WARNING)
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    model = context.Process(target=storm_bench.serve_model, args=(child, turn_seconds), daemon=True)
    model.start()
    base_url = parent.recv()
    with tempfile.TemporaryDirectory() as hook_dir:
        Path(hook_dir, "sitecustomize.py").write_text(HOOK)
        out = str(Path(hook_dir, "snapshot"))
        env = {"PYTHONPATH": hook_dir, "HAPI_PROFILE_OUT": out}
        if frames:
            env["PYTHONTRACEMALLOC"] = str(frames)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # only the server's environment: the model runs already
        try:
            with launched_server(
                HAPI_LLM_PROVIDER="openai",
                HAPI_LLM_BASE_URL=base_url,
                HAPI_LLM_MODEL="bench-model",
                HAPI_LLM_API_KEY="sk-bench-key-0000",
                HAPI_PROFILE_OUT=out,
            ) as server:
                asyncio.run(storm(server.address, server.pid, n, marks))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            parent.send("done")
            parent.recv()
            model.join(10)
        report(out, len(marks) + 1, top)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--at", default="4,7,10", help="seconds into the storm to snapshot")
    parser.add_argument("--tracemalloc", type=int, default=1, help="frames; 0: no tracemalloc")
    parser.add_argument("--top", type=int, default=30, help="lines to print per snapshot")
    # tracemalloc slows the server several times: a longer model turn keeps every
    # call in flight at a mark, as in the benchmark.
    parser.add_argument("--turn-seconds", type=float, default=2.0)
    args = parser.parse_args()
    main(
        args.n,
        [float(s) for s in args.at.split(",")],
        args.tracemalloc,
        args.top,
        args.turn_seconds,
    )
