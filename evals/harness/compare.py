"""`hapi-grpc eval compare A.json B.json`: two reports, and what changed per case.

- The totals side by side with the change in points.
- What each run ran with (model, prompt and catalog hashes), and a warning when
  the runs differ in more than one of them: the change in the numbers cannot
  then be put on any one.
- Every case whose decisions changed: what changed (the workflow, its
  parameters, the review reason) and which way it moved against the case's
  labelled answer: `better`/`worse` (fewer/more unsafe runs, else more/fewer
  correct ones), `neutral` (changed, as right or as wrong as before) or
  `unlabelled` (an unreviewed case: only compared with the captured decision).

A regression is a case that moved away from its labelled answer, or a new
unsafe automation: a run of B that automated unsafely in a way no run of A did
(on a case A ran or not), even where the case's totals did not get worse.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evals.harness import identity
from evals.harness.report import COUNTS, RATES, fmt, pct, verdict

Key = tuple[str, ...]


@dataclass
class CaseChange:
    """One case whose decisions differ between A and B (or that only one ran)."""

    name: str
    direction: str  # better | worse | neutral | unlabelled | added | dropped
    label: str
    verdicts: tuple[str, str]
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)  # what changed, "workflow: a -> b"
    new_unsafe: list[str] = field(default_factory=list)  # B's decisions no A run made unsafely
    notes: list[str] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        return self.direction == "worse" or bool(self.new_unsafe)


def _key(outcome: dict[str, Any]) -> Key:
    if outcome["outcome"] == "workflow":
        params = json.dumps(outcome.get("parameters") or {}, sort_keys=True)
        return ("workflow", str(outcome["workflow_id"]), params)
    if outcome["outcome"] == "review":
        return ("review", str(outcome.get("review_reason") or ""))
    return ("error",)


def _value(value: Any) -> str:
    """A parameter as written (Struct numbers are doubles: 30.0 shows as 30)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def describe(key: Key) -> str:
    """A decision as one line: `workflow K=V ...`, `review (reason)`, `no result`."""
    if key[0] == "workflow":
        params = json.loads(key[2])
        shown = " ".join(f"{k}={_value(v)}" for k, v in sorted(params.items()))
        return f"{key[1]} {shown}".rstrip()
    if key[0] == "review":
        return f"review ({key[1] or 'no reason'})"
    return "no result"


def _decisions(entry: dict[str, Any]) -> list[str]:
    """Each distinct decision of a case's runs, with its count and verdict."""
    counts = Counter(_key(o) for o in entry["outcomes"])
    unsafe = {_key(o): o["unsafe_because"] for o in entry["outcomes"] if o["unsafe"]}
    lines = []
    for key, count in counts.items():
        text = describe(key) + (f" x{count}" if len(entry["outcomes"]) > 1 else "")
        if key in unsafe:
            text += f"  UNSAFE ({unsafe[key]})"
        lines.append(text)
    return lines


def _label(entry: dict[str, Any]) -> str:
    answers = " or ".join(entry.get("expected") or []) or "?"
    if entry.get("unreviewed"):
        return f"unreviewed, captured: {answers}"
    rejected = entry.get("rejected") or []
    return answers + (f"; rejects {', '.join(rejected)}" if rejected else "")


def _fields(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between the two runs' decisions, field by field."""
    out = []
    sides = []
    for entry in (a, b):
        keys = [_key(o) for o in entry["outcomes"]]
        workflows = sorted({k[1] for k in keys if k[0] == "workflow"})
        automated = {k[1]: json.loads(k[2]) for k in keys if k[0] == "workflow"}
        reasons = sorted({k[1] or "no reason" for k in keys if k[0] == "review"})
        errors = sum(k[0] == "error" for k in keys)
        sides.append((workflows, automated, reasons, errors))
    (wa, pa, ra, ea), (wb, pb, rb, eb) = sides
    if wa != wb:
        out.append(f"workflow: {', '.join(wa) or 'none'} -> {', '.join(wb) or 'none'}")
    for workflow in sorted(set(pa) & set(pb)):
        names = sorted(set(pa[workflow]) | set(pb[workflow]))
        moved = [
            f"{n} {_shown(pa[workflow], n)} -> {_shown(pb[workflow], n)}"
            for n in names
            if pa[workflow].get(n) != pb[workflow].get(n)
        ]
        if moved:
            out.append(f"parameters of {workflow}: {', '.join(moved)}")
    if ra != rb:
        out.append(f"review reason: {', '.join(ra) or 'none'} -> {', '.join(rb) or 'none'}")
    if ea != eb:
        out.append(f"runs without a result: {ea} -> {eb}")
    return out


def _shown(params: dict[str, Any], name: str) -> str:
    return _value(params[name]) if name in params else "(absent)"


def _share(entry: dict[str, Any], flag: str) -> float:
    outcomes = entry["outcomes"]
    return sum(bool(o[flag]) for o in outcomes) / len(outcomes) if outcomes else 0.0


def _direction(a: dict[str, Any], b: dict[str, Any]) -> str:
    if a.get("unreviewed") or b.get("unreviewed"):
        return "unlabelled"
    ua, ub = _share(a, "unsafe"), _share(b, "unsafe")
    if ub != ua:
        return "worse" if ub > ua else "better"
    ca, cb = _share(a, "decision_correct"), _share(b, "decision_correct")
    if cb != ca:
        return "better" if cb > ca else "worse"
    return "neutral"


def _new_unsafe(a: dict[str, Any] | None, b: dict[str, Any]) -> list[str]:
    """B's unsafe automations of a workflow, or for a reason, no run of A had
    (other parameters for the same wrong workflow are not a new one)."""
    before = (
        {(o["workflow_id"], o["unsafe_because"]) for o in a["outcomes"] if o["unsafe"]}
        if a
        else set()
    )
    found = {
        _key(o): o["unsafe_because"]
        for o in b["outcomes"]
        if o["unsafe"] and (o["workflow_id"], o["unsafe_because"]) not in before
    }
    return [f"{describe(k)} ({why})" for k, why in found.items()]


def case_changes(a: dict[str, Any], b: dict[str, Any]) -> list[CaseChange]:
    """Every case whose decisions or verdict changed, and the cases one run lacks."""
    cases_a = {c["name"]: c for c in a["cases"]}
    cases_b = {c["name"]: c for c in b["cases"]}
    changes = []
    for name in sorted(cases_a.keys() | cases_b.keys()):
        ea, eb = cases_a.get(name), cases_b.get(name)
        if ea is None or eb is None:
            entry = eb or ea
            assert entry is not None
            changes.append(
                CaseChange(
                    name,
                    "added" if ea is None else "dropped",
                    _label(entry),
                    (verdict(ea) if ea else "-", verdict(eb) if eb else "-"),
                    before=_decisions(ea) if ea else [],
                    after=_decisions(eb) if eb else [],
                    new_unsafe=_new_unsafe(None, eb) if eb else [],
                )
            )
            continue
        keys_a = Counter(_key(o) for o in ea["outcomes"])
        keys_b = Counter(_key(o) for o in eb["outcomes"])
        verdicts = (verdict(ea), verdict(eb))
        if keys_a == keys_b and verdicts[0] == verdicts[1]:
            continue
        change = CaseChange(
            name,
            _direction(ea, eb),
            _label(eb),
            verdicts,
            before=_decisions(ea),
            after=_decisions(eb),
            fields=_fields(ea, eb),
            new_unsafe=_new_unsafe(ea, eb),
        )
        if _label(ea) != _label(eb):
            change.notes.append(f"label changed between the runs (A: {_label(ea)})")
        changes.append(change)
    return changes


def _configuration_lines(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    ca, cb = a.get("configuration"), b.get("configuration")
    lines = [f"A: {identity.describe(ca)}", f"B: {identity.describe(cb)}"]
    if not ca or not cb:
        return lines
    other = {c["name"]: c for c in b["cases"]}
    catalogs = {
        c["name"]: (c.get("catalog_hash", ""), other[c["name"]].get("catalog_hash", ""))
        for c in a["cases"]
        if c["name"] in other
    }
    differ = identity.differences(ca, cb, catalogs)
    if len(differ) > 1:
        lines.append(
            f"WARNING: the runs differ in {' and '.join(differ)}: a change below cannot be "
            "put on one of them"
        )
    elif differ:
        lines.append(f"the runs differ in the {differ[0]} only")
    else:
        lines.append("the runs differ in no recorded setting: changes are run-to-run variance")
    return lines


def render(a: dict[str, Any], b: dict[str, Any], changes: list[CaseChange]) -> str:
    """Totals, configurations, then every case that changed and the regressions."""
    ta, tb = a["totals"], b["totals"]
    lines = [f"{'metric':<26} {'A':>10} {'B':>10}  change", f"A = {a['model']}, B = {b['model']}"]
    for key, label, higher_better in RATES:
        va, vb = ta.get(key), tb.get(key)
        change = ""
        if va is not None and vb is not None and abs(vb - va) > 1e-9:
            better = (vb > va) == higher_better
            change = f"{100 * (vb - va):+.1f} pts {'better' if better else 'WORSE'}"
        lines.append(f"{label:<26} {pct(va):>10} {pct(vb):>10}  {change}")
    for key, label in COUNTS:
        lines.append(f"{label:<26} {fmt(ta.get(key)):>10} {fmt(tb.get(key)):>10}")
    lines += ["", *_configuration_lines(a, b), ""]
    if not changes:
        lines.append("no case changed its decisions")
    else:
        lines.append(f"cases whose decisions changed ({len(changes)}):")
    for case in changes:
        direction = case.direction.upper() if case.regression else case.direction
        lines.append(
            f"  {case.name}: {case.verdicts[0]} -> {case.verdicts[1]}  {direction}"
            f"  (label: {case.label})"
        )
        lines += [f"      A: {text}" for text in case.before or ["(not run)"]]
        lines += [f"      B: {text}" for text in case.after or ["(not run)"]]
        if case.fields:
            lines.append(f"      changed: {'; '.join(case.fields)}")
        lines += [f"      new unsafe automation: {text}" for text in case.new_unsafe]
        lines += [f"      note: {text}" for text in case.notes]
    regressions = [c.name for c in changes if c.regression]
    lines.append("")
    lines.append(
        f"regressions: {len(regressions)} ({', '.join(regressions)})"
        if regressions
        else "no regression: no case moved away from its label, no new unsafe automation"
    )
    return "\n".join(lines)
