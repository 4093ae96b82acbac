"""Where the server's CPU goes in the alert storm: py-spy samples of the served process.

Run: python bench/profile_storm_cpu.py [--n 1000] [--turn-seconds 2] [--runs 3]
     [--rate 100] [--top 25] [--python-only] [--raw FILE]

Runs the storm of `bench_concurrent_investigations.py` (`bench/_storm.py`)
`--runs` times, with `py-spy record --native` attached to `hapi-grpc serve`
while the calls are under way, and adds up the samples. Samples whose
innermost frame is a wait (`epoll_wait`, a futex...) are left out: py-spy
does not recognise the waits of native threads (gRPC's poller) as idle. The
rest are shares of the server's busy time, scaled to its measured CPU per
investigation (the mean of the runs): a share, not a timing, since on a
shared host a thread waiting for a core is sampled as busy.
Printed: own time (the innermost frame) by package and by function, and the
samples by the service's innermost function on the stack (what our code
spent, with the library calls it made). With `--python-only`, a C
extension's time goes to the Python frame that called it, and gRPC's poller
thread shows as `Thread.run`. Diagnostic only: exit status 0.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _storm import Around, run_storm

FRAME = re.compile(r"(?P<function>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
SERVICE = "hapi_grpc/"
# Innermost native frames of a thread that waits (not CPU).
IDLE = frozenset(
    {
        "epoll_wait",
        "epoll_pwait",
        "poll",
        "ppoll",
        "select",
        "pselect",
        "syscall",  # gRPC core's futex waits
        "pthread_cond_wait",
        "pthread_cond_timedwait",
        "__futex_abstimed_wait_common",
        "clock_nanosleep",
        "nanosleep",
    }
)


def package(file: str) -> str:
    """`hapi_grpc/<layer>/<package>`, a library's top-level name, or stdlib's module."""
    parts = file.split("/")
    if file.startswith(SERVICE):
        return "/".join(parts[: min(3, len(parts) - 1)])
    top = parts[0].removesuffix(".py")
    return f"stdlib {top}" if top in sys.stdlib_module_names else top


def parse(path: Path) -> tuple[list[tuple[list[tuple[str, str]], int]], int]:
    """py-spy's raw (collapsed) stacks, [(function, file) from the outermost] and
    count, without the waits; and the number of samples left out as waits."""
    stacks, waits = [], 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = []
        for text in stack.split(";"):
            m = FRAME.match(text)
            frames.append((m["function"], m["file"]) if m else (text, text))
        if frames[-1][0] in IDLE:
            waits += int(count)
        else:
            stacks.append((frames, int(count)))
    return stacks, waits


def report(stacks: list[tuple[list[tuple[str, str]], int]], per_sample_us: float, top: int) -> None:
    total = sum(count for _, count in stacks)
    own_package: collections.Counter[str] = collections.Counter()
    own_function: collections.Counter[tuple[str, str]] = collections.Counter()
    by_service: collections.Counter[str] = collections.Counter()
    for frames, count in stacks:
        function, file = frames[-1]
        own_package[package(file)] += count
        own_function[(function, file)] += count
        ours = [f for f in frames if f[1].startswith(SERVICE) and f[1] != "hapi_grpc/cli.py"]
        where = f"{ours[-1][0]} ({ours[-1][1]})" if ours else "(no service frame)"
        by_service[where] += count

    def rows(counter: collections.Counter[str], limit: int) -> None:
        for name, count in counter.most_common(limit):
            print(f"  {count / total:6.1%} {count * per_sample_us:7.0f} µs  {name}")

    print(f"\n{total} samples; µs are per investigation")
    print("own time by package:")
    rows(own_package, top)
    print("own time by function:")
    rows(
        collections.Counter(
            {f"{f} ({package(file)}: {file})": c for (f, file), c in own_function.items()}
        ),
        top,
    )
    print("by the service's innermost function on the stack (with the libraries it called):")
    rows(by_service, top)


def sampler(out: Path, rate: int, native: bool) -> Around:
    """`around` for `run_storm`: py-spy attached to the server while the calls run."""

    @contextlib.contextmanager
    def around(pid: int) -> Iterator[None]:
        command = ["record", "--pid", str(pid), "--rate", str(rate), "--format", "raw"]
        command += ["--output", str(out)] + (["--native"] if native else [])
        spy = subprocess.Popen(
            [str(Path(sys.executable).with_name("py-spy")), *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)  # attached before the first call
        try:
            yield
        finally:
            spy.send_signal(signal.SIGINT)
            _, errors = spy.communicate(timeout=60)
            if not out.exists():
                raise SystemExit(f"py-spy wrote no samples: {errors.decode()[-2000:]}")

    return around


def main(args: argparse.Namespace) -> None:
    stacks: list[tuple[list[tuple[str, str]], int]] = []
    waits, cpu_us = 0, []
    with tempfile.TemporaryDirectory() as work:
        for run in range(args.runs):
            out = Path(args.raw + f".{run + 1}" if args.raw else Path(work, f"stacks.{run}"))
            spy = sampler(out, args.rate, not args.python_only)
            storm = run_storm(args.n, args.turn_seconds, None, spy)
            print(f"run {run + 1}: load average {os.getloadavg()[0]:.2f}")
            print("\n".join(f"  {line}" for line in storm.lines()))
            found, left_out = parse(out)
            stacks += found
            waits += left_out
            cpu_us.append(storm.cpu_per_investigation_us)
    samples = sum(count for _, count in stacks)
    mean = sum(cpu_us) / len(cpu_us)
    runs = ", ".join(f"{c / 1e3:.2f}" for c in cpu_us)
    print(f"server CPU per investigation: {runs} ms (mean {mean / 1e3:.2f})")
    print(f"samples left out as waits: {waits}")
    report(stacks, mean / max(samples, 1), args.top)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--turn-seconds", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3, help="storms whose samples are added")
    # Faster sampling of native stacks stalls the server: 250/s doubled the wall time.
    parser.add_argument("--rate", type=int, default=100, help="samples per second")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--python-only", action="store_true", help="no native frames")
    parser.add_argument("--raw", default="", help="keep py-spy's stacks in FILE.1, FILE.2...")
    main(parser.parse_args())
