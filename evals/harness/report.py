"""The evaluation report: totals and per-case rows from scored runs, as JSON,
a terminal scoreboard and Markdown (`evals.harness.compare` compares two)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.harness import identity
from evals.harness.scoring import RunScore
from hapi_grpc.cases.case import Case

# 2: `configuration` (model, prompt and catalog hashes), unreviewed cases.
REPORT_VERSION = 2
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
    """The aggregate numbers over `runs` (prices are USD per million tokens).

    Runs of unreviewed cases are left out of every rate that needs a right
    answer (decision, unsafe, review, parameters): `scored_runs` is their
    denominator. They count in the runs, errors, tools, tokens, latency and
    cost, and in `unreviewed_runs`/`unreviewed_changed` (decided otherwise
    than the captured decision).
    """
    scored = [r for r in runs if r.labelled]
    unreviewed = [r for r in runs if not r.labelled]
    automated = [r for r in scored if r.outcome == "workflow"]
    review_expected = [r for r in scored if r.review_expected]
    targeted = [r for r in runs if r.target_checked and r.error is None]
    severity = [r for r in runs if r.severity_in_range is not None]
    prompt = sum(r.prompt_tokens for r in runs)
    completion = sum(r.completion_tokens for r in runs)
    latencies = [r.latency_seconds for r in runs]
    return {
        "runs": len(runs),
        "scored_runs": len(scored),
        "unreviewed_runs": len(unreviewed),
        "unreviewed_changed": sum(r.agrees_with_capture is not True for r in unreviewed),
        "decision_accuracy": _rate(sum(r.decision_correct for r in scored), len(scored)),
        "unsafe_automation_rate": _rate(sum(r.unsafe for r in scored), len(scored)),
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
        "automated_runs": sum(r.outcome == "workflow" for r in runs),
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
    configuration: dict[str, Any] | None = None,
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
                "rejected": list(case.expected.rejected_workflows),
                "unreviewed": case.expected.unreviewed,
                "label": case.expected.label.source if case.expected.label else "written",
                "catalog_hash": next((r.catalog_hash for r in case_runs if r.catalog_hash), ""),
                **totals(case_runs, price_input=price_input, price_output=price_output),
                "outcomes": [r.to_dict() for r in case_runs],
            }
        )
    return {
        "version": REPORT_VERSION,
        "model": model,
        "configuration": configuration or {},
        # "stripped": every catalog served without its CEL declarations (packs alone decide).
        "catalog_declarations": "stripped" if stripped else "as shipped",
        "repeat": repeat,
        "cases_run": len(cases),
        "wall_seconds": round(wall_seconds, 2),
        "prices_per_million_tokens": {"input": price_input, "output": price_output},
        "totals": totals(runs, price_input=price_input, price_output=price_output),
        "cases": entries,
    }


def fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:5.1f}%"


def verdict(entry: dict[str, Any]) -> str:
    """`ok`, `UNSAFE`, `error` or `k/n` correct; for an unreviewed case `same`,
    `changed` or `k/n same` (against the captured decision)."""
    outcomes = entry["outcomes"]
    if entry.get("unreviewed"):
        if any(o["error"] for o in outcomes):
            return "error"
        same = sum(bool(o.get("agrees_with_capture")) for o in outcomes)
        if same in (0, len(outcomes)):
            return "same" if same else "changed"
        return f"{same}/{len(outcomes)} same"
    if any(o["unsafe"] for o in outcomes):
        return "UNSAFE"
    if any(o["error"] for o in outcomes):
        return "error"
    good = sum(o["decision_correct"] for o in outcomes)
    return "ok" if good == len(outcomes) else f"{good}/{len(outcomes)}"


def decided(entry: dict[str, Any]) -> str:
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
        lines.append(f"{entry['name']:<{width}}  {verdict(entry):<7}  {decided(entry)}")
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
    lines.append(f"  {identity.describe(report.get('configuration'))}")
    lines += _unreviewed_lines(t)
    for key, label, _ in RATES:
        lines.append(f"  {label:<26} {pct(t[key])}")
    for key, label in COUNTS:
        lines.append(f"  {label:<26} {fmt(t[key])}")
    return "\n".join(lines)


def _unreviewed_lines(t: dict[str, Any]) -> list[str]:
    """How unreviewed cases count: outside the scored rates, compared with the capture."""
    if not t.get("unreviewed_runs"):
        return []
    return [
        f"  {t['unreviewed_runs']} runs of unreviewed cases are not scored (rates are over "
        f"{t['scored_runs']} scored runs); {t['unreviewed_changed']} decided otherwise "
        "than the captured decision"
    ]


def markdown(report: dict[str, Any]) -> str:
    t = report["totals"]
    out = [
        f"# Decision evaluation: {report['model']}",
        "",
        f"{report['cases_run']} cases x {report['repeat']} runs = {t['runs']} runs, "
        f"{report['wall_seconds']:.1f} s; {identity.describe(report.get('configuration'))}.",
        *_unreviewed_lines(t),
        "",
        "| metric | value |",
        "| --- | --- |",
    ]
    out += [f"| {label} | {pct(t[key])} |" for key, label, _ in RATES]
    out += [f"| {label} | {fmt(t[key])} |" for key, label in COUNTS]
    out += [
        "",
        "| case | expected | verdict | decided | target | unsafe because |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for e in report["cases"]:
        expected = ", ".join(e["expected"])
        expected = f"unreviewed ({expected})" if e.get("unreviewed") else expected
        target = "n/a" if e["target_accuracy"] is None else pct(e["target_accuracy"])
        because = ", ".join(sorted({o["unsafe_because"] for o in e["outcomes"] if o["unsafe"]}))
        out.append(
            f"| {e['name']}{' (holdout)' if e['holdout'] else ''} | {expected} | "
            f"{verdict(e)} | {decided(e)} | {target} | {because} |"
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
    for index, entry in enumerate(report["cases"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("outcomes"), list):
            raise ValueError(f"{path}: case {index} has no outcomes")
    return report
