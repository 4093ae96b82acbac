"""A part of the service's work as a share of an investigation's CPU, measured in a storm.

For benchmarks whose target is such a share (premise evaluation <= 5% of an
investigation's CPU, capturing investigations adds <= 5%). Both ways run the
alert storm of `bench/_storm.py` against `hapi-grpc serve` as shipped, so the
part is measured where it runs, among a thousand interleaved investigations,
and the whole is the server's CPU per investigation in the same storm:

- `timed_share(functions)`: the thread CPU spent inside the named synchronous
  functions, counted in the server by a `sitecustomize` hook that wraps them
  (a nested call of a named function is counted once). Use it for work that
  is a set of functions, e.g. `["hapi_grpc.domain.preconditions:evaluate"]`.
- `added_share(extra_env)`: storms with and without a setting, alternating,
  compared by their median CPU per investigation. Use it for work that a
  setting turns on (capturing: `{"HAPI_CAPTURE_DIR": ...}`), or that runs in
  tasks and threads of its own.

    share = timed_share(["hapi_grpc.domain.preconditions:evaluate"], label="premises")
    print(share.line(0.05)); sys.exit(0 if share.met(0.05) else 1)

Run as a script to measure named functions: python bench/cpu_share.py
MODULE:QUALNAME [...] [--n 1000] [--turn-seconds 2] [--target 0.05].
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _storm import Settle, run_storm

# Runs inside the server only (its directory is put on the server's PYTHONPATH).
# SIGUSR1 writes the totals so far; the bench reads them before and after the storm.
HOOK = """
import importlib, inspect, json, os, signal, threading, time
_state = threading.local()
_totals = {}
def _wrap(spec):
    module_name, _, qualname = spec.partition(":")
    owner = importlib.import_module(module_name)
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    raw = inspect.getattr_static(owner, name)
    func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    if not inspect.isfunction(func):
        raise TypeError(f"{spec}: not a function")
    if inspect.iscoroutinefunction(func) or inspect.isgeneratorfunction(func) or \\
            inspect.isasyncgenfunction(func):
        raise TypeError(f"{spec}: its CPU is not spent inside the call; use added_share")
    totals = _totals.setdefault(spec, [0, 0])
    def timed(*args, **kwargs):
        if getattr(_state, "inside", False):
            return func(*args, **kwargs)
        _state.inside = True
        started = time.thread_time_ns()
        try:
            return func(*args, **kwargs)
        finally:
            totals[0] += 1
            totals[1] += time.thread_time_ns() - started
            _state.inside = False
    timed.__wrapped__ = func
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        setattr(timed, attribute, getattr(func, attribute))
    wrapped = type(raw)(timed) if isinstance(raw, (staticmethod, classmethod)) else timed
    setattr(owner, name, wrapped)
_errors = []
def _dump(signum, frame):
    out = os.environ["BENCH_TIMED_OUT"]
    with open(out + ".tmp", "w") as f:
        json.dump({"totals": _totals, "errors": _errors}, f)
    os.replace(out + ".tmp", out)
signal.signal(signal.SIGUSR1, _dump)
for _spec in os.environ["BENCH_TIMED_FUNCTIONS"].split(","):
    try:
        _wrap(_spec)
    except Exception as error:
        _errors.append(f"{_spec}: {error!r}")
"""


@dataclass(frozen=True)
class Share:
    """`part_us` of an investigation's `whole_us` CPU (both per investigation)."""

    label: str
    part_us: float
    whole_us: float
    detail: str = ""

    @property
    def share(self) -> float:
        return self.part_us / self.whole_us if self.whole_us else float("inf")

    def met(self, target: float) -> bool:
        return self.share <= target

    def line(self, target: float) -> str:
        verdict = "met" if self.met(target) else "NOT met"
        return (
            f"{self.label}: {self.part_us:.0f} µs / {self.whole_us:.0f} µs of server CPU per"
            f" investigation = {self.share:.1%} (target <= {target:.0%}): {verdict}"
            + (f"; {self.detail}" if self.detail else "")
        )


def _totals(pid: int, out: Path) -> dict[str, list[int]]:
    """The hook's totals so far (calls, thread CPU ns per function)."""
    out.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not out.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the server did not write its timed totals")
        time.sleep(0.01)
    written = json.loads(out.read_text())
    if written["errors"]:
        raise SystemExit("cannot time: " + "; ".join(written["errors"]))
    totals: dict[str, list[int]] = written["totals"]
    return totals


def timed_share(
    functions: Sequence[str],
    *,
    label: str,
    n: int = 1000,
    turn_seconds: float = 2.0,
    extra_env: Mapping[str, str] | None = None,
) -> Share:
    """CPU inside `functions` ("package.module:Qualified.name", synchronous) per
    investigation, over one storm, against the server's CPU per investigation in it.

    The hook imports each function's module before the service does and replaces the
    function there, so a later `from module import function` gets the timed one; a
    reference its own module takes at import time (a dispatch table) is not timed.
    """
    with tempfile.TemporaryDirectory() as hook_dir:
        Path(hook_dir, "sitecustomize.py").write_text(HOOK)
        out = Path(hook_dir, "totals.json")
        counted: dict[str, tuple[int, int]] = {}

        @contextlib.contextmanager
        def around(pid: int) -> Iterator[None]:
            before = _totals(pid, out)
            yield
            after = _totals(pid, out)
            for spec in functions:
                counted[spec] = (
                    after[spec][0] - before[spec][0],
                    after[spec][1] - before[spec][1],
                )

        env = {
            **(extra_env or {}),
            "PYTHONPATH": os.pathsep.join(filter(None, [hook_dir, os.environ.get("PYTHONPATH")])),
            "BENCH_TIMED_FUNCTIONS": ",".join(functions),
            "BENCH_TIMED_OUT": str(out),
        }
        storm = run_storm(n, turn_seconds, env, around)
    if storm.decided() != n:
        raise SystemExit(f"{label}: only {storm.decided()}/{n} investigations decided")
    missing = [spec for spec, (calls, _) in counted.items() if calls == 0]
    if missing:
        raise SystemExit(f"{label}: no call seen during the storm: {', '.join(missing)}")
    part_ns = sum(ns for _, ns in counted.values())
    calls = ", ".join(f"{spec} {c / n:.1f} calls" for spec, (c, _) in counted.items())
    return Share(
        label,
        part_ns / n / 1e3,
        storm.cpu_per_investigation_us,
        f"per investigation: {calls}; wall {storm.wall:.2f} s",
    )


def added_share(
    extra_env: Mapping[str, str],
    *,
    label: str,
    n: int = 1000,
    turn_seconds: float = 2.0,
    rounds: int = 3,
    settle: Settle | None = None,
) -> Share:
    """The server's CPU per investigation that `extra_env` adds, as a share of it
    without: `rounds` storms each way, alternating, compared by medians. With
    `settle`, the storms with the setting count the work left after the calls
    (`_storm.Settle`)."""
    without: list[float] = []
    with_it: list[float] = []
    for _ in range(rounds):
        for runs, env, wait in ((without, None, None), (with_it, extra_env, settle)):
            storm = run_storm(n, turn_seconds, env, settle=wait)
            if storm.decided() != n:
                raise SystemExit(f"{label}: only {storm.decided()}/{n} investigations decided")
            runs.append(storm.cpu_per_investigation_us)
    base, added = statistics.median(without), statistics.median(with_it)
    spread = f"without {min(without):.0f}-{max(without):.0f} µs, with {min(with_it):.0f}-"
    return Share(
        label,
        added - base,
        base,
        f"{rounds} storms each way, {spread}{max(with_it):.0f} µs",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("functions", nargs="+", help="MODULE:QUALNAME of synchronous functions")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--turn-seconds", type=float, default=2.0)
    parser.add_argument("--target", type=float, default=0.05)
    args = parser.parse_args()
    result = timed_share(
        args.functions, label="named functions", n=args.n, turn_seconds=args.turn_seconds
    )
    print(f"load average {os.getloadavg()[0]:.2f}; {result.line(args.target)}")
    sys.exit(0 if result.met(args.target) else 1)
