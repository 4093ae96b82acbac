"""gRPC load benchmark of the real server with ghz.

Run: .venv/bin/python bench/bench_ghz.py [--requests 2000] [--concurrency 1,10,50]
                                         [--addr HOST:PORT] [--json out.json]

Starts `hapi-grpc serve` on a free 127.0.0.1 port (embedded catalog,
built-in analyst; or uses --addr) and runs ghz (.tools/bin/ghz, installed by
scripts/install_go_tools.sh when missing) against:

  health    grpc.health.v1.Health/Check              raw unary baseline
  analyze   IncidentAnalysisService/AnalyzeIncident  examples/oomkilled.json
  validate  IncidentAnalysisService/ValidateWorkflowParameters

at each concurrency, a bounded number of requests each (after a short
warm-up), and prints rps, p50 and p99 per target, with each target's rps and
p50 also as a percentage of the baseline at the same concurrency. ghz and
the server share the machine's cores, so absolute figures are a floor.

ghz resolves methods from descriptor sets, not server reflection (the
server's reflection does not resolve method symbols): build/hapi.binpb
(rebuilt with buf) for hapi.v1, and one written from the installed
grpc_health package for grpc.health.v1.
Exits non-zero when a run has errors (non-OK responses).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import server_process, wait_serving

REPO = Path(__file__).resolve().parents[1]
GHZ = REPO / ".tools" / "bin" / "ghz"
SERVICE = "hapi.v1.IncidentAnalysisService"

VALID_PARAMETERS = {
    "workflowId": "oomkill-increase-memory-v1",
    "parameters": {
        "NAMESPACE": "payments",
        "DEPLOYMENT_NAME": "payment-api",
        "MEMORY_LIMIT_NEW": "1Gi",
    },
}


@dataclass(frozen=True)
class Target:
    name: str
    method: str
    data: str  # JSON text of the request
    protoset: Path


def targets(hapi_protoset: Path, health_protoset: Path) -> list[Target]:
    example = json.loads((REPO / "examples" / "oomkilled.json").read_text(encoding="utf-8"))
    # A new remediation id per request (ghz fills the template): a repeated id
    # would be answered from the kept result and measure reuse, not analysis.
    example["incident"]["remediationId"] = "rr-ghz-{{.RequestNumber}}-{{newUUID}}"
    return [
        Target(
            "health", "grpc.health.v1.Health/Check", json.dumps({"service": ""}), health_protoset
        ),
        Target(
            "analyze",
            f"{SERVICE}/AnalyzeIncident",
            json.dumps(example),
            hapi_protoset,
        ),
        Target(
            "validate",
            f"{SERVICE}/ValidateWorkflowParameters",
            json.dumps(VALID_PARAMETERS),
            hapi_protoset,
        ),
    ]


def build_hapi_protoset() -> Path:
    """build/hapi.binpb from the current protos (as scripts/gen_go.sh builds it)."""
    out = REPO / "build" / "hapi.binpb"
    subprocess.run([str(REPO / "scripts" / "fetch_protos.sh")], check=True, timeout=300)
    out.parent.mkdir(exist_ok=True)
    buf = Path(sys.executable).parent / "buf"
    subprocess.run(
        [str(buf), "build", "-o", str(out), "--path", "protos/hapi/v1"],
        cwd=REPO,
        check=True,
        timeout=300,
    )
    return out


def write_health_protoset(path: Path) -> Path:
    """A descriptor set of grpc/health/v1/health.proto from the installed package."""
    proto = descriptor_pb2.FileDescriptorProto()
    health_pb2.DESCRIPTOR.CopyToProto(proto)
    path.write_bytes(descriptor_pb2.FileDescriptorSet(file=[proto]).SerializeToString())
    return path


@dataclass
class Result:
    target: str
    concurrency: int
    count: int
    errors: int
    rps: float
    p50_ms: float
    p99_ms: float
    statuses: dict[str, int]


def ensure_ghz() -> Path:
    if not GHZ.exists():
        subprocess.run(
            [str(REPO / "scripts" / "install_go_tools.sh"), "ghz"], check=True, timeout=900
        )
    return GHZ


def run_ghz(
    ghz: Path, address: str, target: Target, concurrency: int, requests: int
) -> dict[str, Any]:
    args = [
        str(ghz),
        "--insecure",
        "--call",
        target.method,
        "--data",
        target.data,
        "--total",
        str(requests),
        "--concurrency",
        str(concurrency),
        "--timeout",
        "20s",
        "--format",
        "json",
        "--protoset",
        str(target.protoset),
        address,
    ]
    # Bounded: a request takes at most the 20s timeout; this caps the whole run.
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and not done.stdout.strip():
        raise SystemExit(f"ghz failed ({done.returncode}): {done.stderr.strip()}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def summarize(target: str, concurrency: int, report: dict[str, Any]) -> Result:
    latencies = {
        int(p["percentage"]): float(p["latency"]) / 1e6
        for p in report.get("latencyDistribution") or []
    }
    statuses = {str(k): int(v) for k, v in (report.get("statusCodeDistribution") or {}).items()}
    count = int(report.get("count", 0))
    return Result(
        target=target,
        concurrency=concurrency,
        count=count,
        errors=count - statuses.get("OK", 0),
        rps=float(report.get("rps", 0.0)),
        p50_ms=latencies.get(50, float("nan")),
        p99_ms=latencies.get(99, float("nan")),
        statuses=statuses,
    )


def pct(value: float, base: float) -> str:
    return f"{100.0 * value / base:6.1f}%" if base > 0 else "    n/a"


def print_table(results: list[Result]) -> None:
    baseline = {r.concurrency: r for r in results if r.target == "health"}
    header = (
        f"{'target':<9} {'conc':>4} {'requests':>8} {'errors':>6} {'rps':>9} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'rps/base':>8} {'p50/base':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in sorted(results, key=lambda r: (r.concurrency, r.target != "health", r.target)):
        base = baseline.get(r.concurrency)
        rps_pct = pct(r.rps, base.rps) if base else "    n/a"
        p50_pct = pct(r.p50_ms, base.p50_ms) if base else "    n/a"
        print(
            f"{r.target:<9} {r.concurrency:>4} {r.count:>8} {r.errors:>6} {r.rps:>9.0f} "
            f"{r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {rps_pct:>8} {p50_pct:>8}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per run")
    parser.add_argument("--warmup", type=int, default=200, help="warm-up requests per target")
    parser.add_argument("--concurrency", default="1,10,50", help="comma-separated levels")
    parser.add_argument("--addr", help="benchmark a running server instead of starting one")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    ghz = ensure_ghz()
    hapi_protoset = build_hapi_protoset()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        health_protoset = write_health_protoset(Path(tmp) / "health.binpb")
        if args.addr:
            address = args.addr
            wait_serving(address, None, timeout=10)
        else:
            address = stack.enter_context(server_process())
        print(
            f"server {address}; ghz {ghz}; "
            f"{args.requests} requests per run; {os.cpu_count()} CPUs shared by ghz "
            "and the server",
            flush=True,
        )
        results: list[Result] = []
        for target in targets(hapi_protoset, health_protoset):
            run_ghz(ghz, address, target, 10, args.warmup)
            for level in levels:
                report = run_ghz(ghz, address, target, level, args.requests)
                result = summarize(target.name, level, report)
                results.append(result)
                print(
                    f"  {target.name:<9} c={level:<3} {result.rps:8.0f} rps  "
                    f"p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms  "
                    f"statuses {result.statuses}",
                    flush=True,
                )
    print()
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2) + "\n")
    failed = [r for r in results if r.errors]
    for r in failed:
        print(f"error: {r.target} c={r.concurrency}: statuses {r.statuses}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
