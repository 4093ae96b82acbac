"""The evaluation report: totals and per-case rows from scored runs, as JSON,
a terminal scoreboard and Markdown; and the comparison of two JSON reports."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.harness.cases import Case
from evals.harness.scoring import RunScore

REPORT_VERSION = 1
# (key, label, higher is better); rates are fractions in [0, 1] or None (no runs apply).
RATES = (
    ("decision_accuracy", "decision accuracy", True),
    ("unsafe_automation_rate", "unsafe automation rate", False),
    ("correct_review_rate", "correct-review rate", True),
    ("parameter_validity_rate", "parameter-validity rate", True),
    ("target_accuracy", "target-resource accuracy", True),
    ("severity_accuracy", "RCA severity in range", True),
    ("fact_coverage", "root-cause facts found", True),
    ("error_rate", "runs without a result", False),
)
COUNTS = (
    ("mean_tool_calls", "tool calls / run"),
    ("mean_turns", "model turns / run"),
    ("total_prompt_tokens", "prompt tokens"),
    ("total_completion_tokens", "completion tokens"),
    ("latency_p50_seconds", "latency p50 (s)"),
    ("latency_p95_seconds", "latency p95 (s)"),
    ("cost_usd", "cost (USD)"),
)


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _percentile(values: Sequence[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def totals(
    runs: Sequence[RunScore], *, price_input: float = 0.0, price_output: float = 0.0
) -> dict[str, Any]:
    """The aggregate numbers over `runs` (prices are USD per million tokens)."""
    automated = [r for r in runs if r.outcome == "workflow"]
    review_expected = [r for r in runs if r.review_expected]
    targeted = [r for r in runs if r.target_checked and r.error is None]
    severity = [r for r in runs if r.severity_in_range is not None]
    prompt = sum(r.prompt_tokens for r in runs)
    completion = sum(r.completion_tokens for r in runs)
    latencies = [r.latency_seconds for r in runs]
    return {
        "runs": len(runs),
        "decision_accuracy": _rate(sum(r.decision_correct for r in runs), len(runs)),
        "unsafe_automation_rate": _rate(sum(r.unsafe for r in runs), len(runs)),
        "correct_review_rate": _rate(
            sum(r.correct_review for r in review_expected), len(review_expected)
        ),
        "parameter_validity_rate": _rate(
            sum(bool(r.parameters_valid) for r in automated), len(automated)
        ),
        "target_accuracy": _rate(sum(bool(r.target_correct) for r in targeted), len(targeted)),
        "severity_accuracy": _rate(sum(bool(r.severity_in_range) for r in severity), len(severity)),
        "fact_coverage": _rate(sum(r.facts_found for r in runs), sum(r.facts_total for r in runs)),
        "error_rate": _rate(sum(r.error is not None for r in runs), len(runs)),
        "automated_runs": len(automated),
        "unsafe_runs": sum(r.unsafe for r in runs),
        "mean_tool_calls": statistics.fmean([r.tool_calls for r in runs]) if runs else 0.0,
        "mean_turns": statistics.fmean([r.turns for r in runs]) if runs else 0.0,
        "total_prompt_tokens": prompt,
        "total_completion_tokens": completion,
        "latency_p50_seconds": _percentile(latencies, 0.5),
        "latency_p95_seconds": _percentile(latencies, 0.95),
        "cost_usd": (prompt * price_input + completion * price_output) / 1_000_000,
    }


def build_report(
    cases: Sequence[Case],
    runs: Sequence[RunScore],
    *,
    model: str,
    repeat: int,
    price_input: float = 0.0,
    price_output: float = 0.0,
    wall_seconds: float = 0.0,
    stripped: bool = False,
) -> dict[str, Any]:
    by_case: dict[str, list[RunScore]] = {c.name: [] for c in cases}
    for run in runs:
        by_case.setdefault(run.case, []).append(run)
    entries = []
    for case in cases:
        case_runs = by_case[case.name]
        entries.append(
            {
                "name": case.name,
                "tags": list(case.tags),
                "holdout": case.meta.holdout,
                "expected": list(case.expected.workflows)
                + (["review"] if case.expected.review else []),
                **totals(case_runs, price_input=price_input, price_output=price_output),
                "outcomes": [r.to_dict() for r in case_runs],
            }
        )
    return {
        "version": REPORT_VERSION,
        "model": model,
        # "stripped": every catalog served without its CEL declarations (packs alone decide).
        "catalog_declarations": "stripped" if stripped else "as shipped",
        "repeat": repeat,
        "cases_run": len(cases),
        "wall_seconds": round(wall_seconds, 2),
        "prices_per_million_tokens": {"input": price_input, "output": price_output},
        "totals": totals(runs, price_input=price_input, price_output=price_output),
        "cases": entries,
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:5.1f}%"


def _verdict(entry: dict[str, Any]) -> str:
    outcomes = entry["outcomes"]
    if any(o["unsafe"] for o in outcomes):
        return "UNSAFE"
    if any(o["error"] for o in outcomes):
        return "error"
    good = sum(o["decision_correct"] for o in outcomes)
    return "ok" if good == len(outcomes) else f"{good}/{len(outcomes)}"


def _decided(entry: dict[str, Any]) -> str:
    seen = []
    for o in entry["outcomes"]:
        text = o["workflow_id"] if o["outcome"] == "workflow" else f"review:{o['review_reason']}"
        text = o["outcome"] if o["outcome"] == "error" else text
        if text not in seen:
            seen.append(text)
    return ", ".join(seen)


def scoreboard(report: dict[str, Any]) -> str:
    """The terminal view: per case one line, then the totals."""
    t = report["totals"]
    width = max([len(c["name"]) for c in report["cases"]] + [4])
    lines = [f"{'case':<{width}}  verdict  decided"]
    for entry in report["cases"]:
        lines.append(f"{entry['name']:<{width}}  {_verdict(entry):<7}  {_decided(entry)}")
    lines.append("")
    lines.append(
        f"model {report['model']}: {report['cases_run']} cases x {report['repeat']} "
        f"= {t['runs']} runs in {report['wall_seconds']:.1f} s"
        + (
            " (catalog declarations stripped)"
            if report.get("catalog_declarations") == "stripped"
            else ""
        )
    )
    for key, label, _ in RATES:
        lines.append(f"  {label:<26} {_pct(t[key])}")
    for key, label in COUNTS:
        lines.append(f"  {label:<26} {_fmt(t[key])}")
    return "\n".join(lines)


def markdown(report: dict[str, Any]) -> str:
    t = report["totals"]
    out = [
        f"# Decision evaluation: {report['model']}",
        "",
        f"{report['cases_run']} cases x {report['repeat']} runs = {t['runs']} runs, "
        f"{report['wall_seconds']:.1f} s.",
        "",
        "| metric | value |",
        "| --- | --- |",
    ]
    out += [f"| {label} | {_pct(t[key])} |" for key, label, _ in RATES]
    out += [f"| {label} | {_fmt(t[key])} |" for key, label in COUNTS]
    out += [
        "",
        "| case | expected | verdict | decided | target | unsafe because |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for e in report["cases"]:
        expected = ", ".join(e["expected"])
        target = "n/a" if e["target_accuracy"] is None else _pct(e["target_accuracy"])
        because = ", ".join(sorted({o["unsafe_because"] for o in e["outcomes"] if o["unsafe"]}))
        out.append(
            f"| {e['name']}{' (holdout)' if e['holdout'] else ''} | {expected} | "
            f"{_verdict(e)} | {_decided(e)} | {target} | {because} |"
        )
    return "\n".join(out) + "\n"


def write_json(report: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def load_report(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable report: {exc}") from None
    if not isinstance(report, dict) or "totals" not in report or "cases" not in report:
        raise ValueError(f"{path}: not an evaluation report (no totals/cases)")
    return report


def compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    """Totals side by side with the change, then the cases whose verdict changed."""
    ta, tb = a["totals"], b["totals"]
    lines = [f"{'metric':<26} {'A':>10} {'B':>10}  change", f"A = {a['model']}, B = {b['model']}"]
    for key, label, higher_better in RATES:
        va, vb = ta.get(key), tb.get(key)
        change = ""
        if va is not None and vb is not None and abs(vb - va) > 1e-9:
            better = (vb > va) == higher_better
            change = f"{100 * (vb - va):+.1f} pts {'better' if better else 'WORSE'}"
        lines.append(f"{label:<26} {_pct(va):>10} {_pct(vb):>10}  {change}")
    for key, label in COUNTS:
        va, vb = ta.get(key), tb.get(key)
        lines.append(f"{label:<26} {_fmt(va):>10} {_fmt(vb):>10}")
    cases_a = {c["name"]: c for c in a["cases"]}
    cases_b = {c["name"]: c for c in b["cases"]}
    changed = []
    for name in sorted(cases_a.keys() | cases_b.keys()):
        va = _verdict(cases_a[name]) if name in cases_a else "-"
        vb = _verdict(cases_b[name]) if name in cases_b else "-"
        if va != vb:
            changed.append(f"  {name}: {va} -> {vb}")
    lines.append("")
    lines.append("cases whose verdict changed:" if changed else "no case changed its verdict")
    return "\n".join(lines + changed)
