"""`hapi-grpc calibration`: how often automated decisions worked, by confidence.

Design notes: docs/internals.md (`calibration.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Table", "add_parser", "from_history", "from_metrics", "render"]

Table = dict[str, dict[str, int]]  # bucket -> {"succeeded": n, "failed": n}

METRIC = "hapi_decision_calibration"
MAX_METRICS_BYTES = 16 * 1024 * 1024
MAX_LINES = 10_000_000


def add_parser(sub: Any) -> None:
    """Register the `calibration` command on the `hapi-grpc` subparsers."""
    p = sub.add_parser("calibration", help="print the decider's calibration table")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--metrics-url", help="a server's /metrics, e.g. http://host:9090/metrics")
    source.add_argument("--history-file", help="history export: JSON Lines of outcome records")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for /metrics")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.set_defaults(func=_command)


def _command(args: argparse.Namespace) -> int:
    try:
        if args.metrics_url:
            table = from_metrics(_fetch(args.metrics_url, args.timeout))
        else:
            with Path(args.history_file).open(encoding="utf-8") as lines:
                table = from_history(lines)
    except (OSError, ValueError) as exc:
        print(f"hapi-grpc calibration: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(_rows(table), indent=2))
    else:
        print(render(table))
    return 0


def _fetch(url: str, timeout: float) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError("--metrics-url must be an http(s) URL")
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        body = resp.read(MAX_METRICS_BYTES + 1)
    if len(body) > MAX_METRICS_BYTES:
        raise ValueError(f"/metrics is larger than {MAX_METRICS_BYTES} bytes")
    return str(body.decode("utf-8", errors="replace"))


def from_metrics(text: str) -> Table:
    """The table from Prometheus text exposition."""
    table: Table = {}
    for family in text_string_to_metric_families(text):
        if family.name != METRIC:
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            bucket, result = sample.labels.get("confidence"), sample.labels.get("result")
            if bucket and result in ("succeeded", "failed"):
                row = table.setdefault(bucket, {"succeeded": 0, "failed": 0})
                row[result] += int(sample.value)
    return table


def from_history(lines: Iterable[str]) -> Table:
    """The table from outcome records: automated decisions that were executed."""
    from hapi_grpc.application.outcomes import confidence_bucket

    table: Table = {}
    for number, line in enumerate(lines, 1):
        if number > MAX_LINES:
            break
        if not line.strip():
            continue
        record = json.loads(line)
        entry = record.get("entry", record) if isinstance(record, dict) else None
        if not isinstance(entry, dict) or entry.get("automated") is not True:
            continue
        confidence, outcome = entry.get("confidence"), entry.get("outcome")
        if not isinstance(confidence, int | float) or outcome not in ("Success", "Failed"):
            continue
        row = table.setdefault(confidence_bucket(float(confidence)), {"succeeded": 0, "failed": 0})
        row["succeeded" if outcome == "Success" else "failed"] += 1
    return table


def _rows(table: Table) -> list[dict[str, Any]]:
    rows = []
    for bucket in sorted(table):
        ok, failed = table[bucket]["succeeded"], table[bucket]["failed"]
        total = ok + failed
        rows.append(
            {
                "confidence": bucket,
                "executed": total,
                "succeeded": ok,
                "failed": failed,
                "success_rate": round(ok / total, 3) if total else None,
            }
        )
    return rows


def render(table: Table) -> str:
    """A text table, lowest confidence first."""
    if not table:
        return "no executed automated decisions reported yet"
    lines = [f"{'confidence':<12}{'executed':>10}{'succeeded':>11}{'failed':>8}{'success':>9}"]
    for row in _rows(table):
        rate = "-" if row["success_rate"] is None else f"{row['success_rate']:.0%}"
        lines.append(
            f"{row['confidence']:<12}{row['executed']:>10}{row['succeeded']:>11}"
            f"{row['failed']:>8}{rate:>9}"
        )
    return "\n".join(lines)
