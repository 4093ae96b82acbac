"""A captured case's `expected.yaml`: derived from what is known, or set by an operator.

Derived from the case's provenance (`derived_expected`):

- outcome `succeeded` (and the signal not reported as still there): the
  executed workflow is acceptable, its parameters as `equals` constraints, the
  remediated resource as the target; label source `outcome`;
- outcome `failed`, or `declined` by a human: that workflow is rejected (and
  automating it is unsafe), review is acceptable; label source `outcome`;
- no outcome yet, or a success whose signal did not clear: the captured
  decision, `unreviewed: true`, replayed and compared but not scored; label
  source `capture`.

An operator's label (`accept`, `reject`, `expect_review`) replaces the decision
fields and is never overwritten by an outcome arriving later. The target,
severity and facts already in `expected.yaml` are kept. Capturing writes
`captured_texts` and calls `record_outcome` when the outcome is reported.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hapi_grpc.cases.case import Case
from hapi_grpc.cases.constraints import Constraint
from hapi_grpc.cases.expected import Expected
from hapi_grpc.cases.provenance import Decision, Outcome, Provenance, decision_of, outcome_of

# The fields a label sets; the others (target, severity, facts) are kept.
DECISION_FIELDS = ("workflows", "review", "parameters", "rejected_workflows", "unreviewed", "label")


class LabelError(ValueError):
    """A label cannot be applied; the message says why and what to do."""


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
    )


def _stamp(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _label(source: str, at: datetime, by: str = "", note: str = "") -> dict[str, Any]:
    label: dict[str, Any] = {"source": source, "at": _stamp(at)}
    return label | ({"by": by} if by else {}) | ({"note": note} if note else {})


def _accepting(workflow_id: str, constraints: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"workflows": [workflow_id]}
    if constraints:
        body["parameters"] = {workflow_id: dict(sorted(constraints.items()))}
    return body


def _equals(parameters: dict[str, Any]) -> dict[str, Any]:
    return {name: {"equals": value} for name, value in parameters.items()}


def _kept(current: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (current or {}).items() if k not in DECISION_FIELDS}


def derived_expected(
    decision: Decision, outcome: Outcome | None, at: datetime, current: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The `expected.yaml` body known from the captured decision and its outcome."""
    body = _kept(current)
    succeeded = outcome and outcome.result == "succeeded" and outcome.signal_cleared is not False
    if outcome and succeeded and outcome.workflow_id:
        body["target_resource"] = {k: v for k, v in outcome.target.items() if v}
        return (
            body
            | _accepting(outcome.workflow_id, _equals(outcome.parameters))
            | {"label": _label("outcome", at, note=f"{outcome.workflow_id} {outcome.text()}")}
        )
    if outcome and outcome.result in ("failed", "declined"):
        workflow = outcome.workflow_id or decision.workflow_id
        if workflow:
            return body | {
                "review": {"reasons": []},
                "rejected_workflows": [workflow],
                "label": _label("outcome", at, note=f"{workflow} {outcome.text()}"),
            }
    note = f"outcome: {outcome.text()}" if outcome else ""
    if decision.workflow_id is None:
        reasons = [decision.review_reason] if decision.review_reason else []
        decided: dict[str, Any] = {"review": {"reasons": reasons}}
    else:
        decided = _accepting(decision.workflow_id, _equals(decision.parameters))
    return body | decided | {"unreviewed": True, "label": _label("capture", at, note=note)}


def review_reason(text: str) -> str:
    """A reason of the proto enum HumanReviewReason, as `expected.yaml` spells it
    (`precondition_not_met`); `any` is "" (every reason acceptable)."""
    from hapi.v1 import analysis_pb2

    names = [
        n.removeprefix("HUMAN_REVIEW_REASON_").lower()
        for n in analysis_pb2.HumanReviewReason.keys()
        if not n.endswith("_UNSPECIFIED")
    ]
    wanted = text.strip().lower().removeprefix("human_review_reason_")
    if wanted == "any":
        return ""
    if wanted not in names:
        raise LabelError(f"unknown review reason {text!r}: one of any, {', '.join(names)}")
    return wanted


def parse_param(text: str) -> tuple[str, dict[str, Any]]:
    """`NAME=VALUE` (the value must equal VALUE) or `NAME={constraint}` (the
    constraint language of `evals.harness.constraints`, as YAML flow)."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise LabelError(f"--param {text!r}: give NAME=VALUE or NAME={{constraint}}")
    try:
        value = yaml.safe_load(raw) if raw.strip().startswith("{") else raw
    except yaml.YAMLError as exc:
        raise LabelError(f"--param {name}: not a YAML mapping: {exc}") from None
    constraint = value if isinstance(value, dict) else {"equals": value}
    try:
        Constraint.model_validate(constraint)
    except ValidationError as exc:
        raise LabelError(f"--param {name}: not a constraint: {_problems(exc)}") from None
    return name.strip(), constraint


def _captured(case: Case) -> Provenance:
    if case.meta.captured is None:
        raise LabelError(
            f"{case.name}: not a captured case (no `captured` in case.yaml); "
            "its expected.yaml is written by hand"
        )
    return case.meta.captured


def _current(case: Case) -> dict[str, Any]:
    return case.expected.model_dump(mode="json", exclude_defaults=True)


def accept(
    case: Case,
    *,
    at: datetime,
    by: str = "",
    note: str = "",
    workflow: str | None = None,
    constraints: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The captured decision (or `workflow` instead) is right; `constraints`
    replace those on the named parameters."""
    decision = decision_of(_captured(case))
    current = _current(case)
    body = _kept(current)
    rejected = list(current.get("rejected_workflows", []))
    if workflow is None and decision.workflow_id is None:
        if constraints:
            raise LabelError(
                f"{case.name}: the captured decision is a review, it has no parameters; "
                "name the right workflow with --workflow"
            )
        reasons = [decision.review_reason] if decision.review_reason else []
        body["review"] = {"reasons": reasons}
    else:
        chosen = workflow or decision.workflow_id or ""
        captured = _equals(decision.parameters) if chosen == decision.workflow_id else {}
        _check_names(case, chosen, set(captured), workflow is not None, constraints or {})
        body |= _accepting(chosen, {**captured, **(constraints or {})})
        rejected = [w for w in rejected if w != chosen]
    if rejected:
        body["rejected_workflows"] = rejected
    return body | {"label": _label("operator", at, by, note)}


def _catalog_parameters(case: Case, workflow_id: str) -> set[str] | None:
    """The parameters the case's catalog (its own, else the bundled one: what
    a replay searches) declares for the workflow; None when it has no such one."""
    from hapi_grpc.adapters.catalog.loader import load_bundled_catalog, load_catalog_file

    file = case.catalog_file
    workflows = load_catalog_file(file) if file else load_bundled_catalog()
    found = [w for w in workflows if w.workflow_id == workflow_id]
    return {p.name for w in found for p in w.parameters} if found else None


def _check_names(
    case: Case, workflow: str, captured: set[str], named: bool, constraints: dict[str, Any]
) -> None:
    """A named workflow must be one a replay can choose; a constrained parameter
    one it declares (a misspelt name would fail every run as invalid)."""
    declared = _catalog_parameters(case, workflow)
    if declared is None and named:
        raise LabelError(
            f"{case.name}: the catalog this case runs with has no workflow {workflow!r}"
        )
    known = declared if declared is not None else captured
    unknown = sorted(set(constraints) - known) if known else []
    if unknown:
        raise LabelError(
            f"{case.name}: {workflow} has no parameter {', '.join(unknown)}"
            f" (it has {', '.join(sorted(known))})"
        )


def reject(case: Case, *, at: datetime, by: str = "", note: str = "") -> dict[str, Any]:
    """The captured workflow is wrong: automating it is unsafe, review is acceptable."""
    decision = decision_of(_captured(case))
    if decision.workflow_id is None:
        raise LabelError(
            f"{case.name}: the captured decision is a review, which automates nothing; to "
            "say a workflow was right: --accept NAME --workflow ID"
        )
    current = _current(case)
    rejected = list(dict.fromkeys([*current.get("rejected_workflows", []), decision.workflow_id]))
    return _kept(current) | {
        "review": {"reasons": []},
        "rejected_workflows": rejected,
        "label": _label("operator", at, by, note),
    }


def expect_review(
    case: Case, reason: str, *, at: datetime, by: str = "", note: str = ""
) -> dict[str, Any]:
    """Only human review is right, for `reason` (a HumanReviewReason, or `any`)."""
    _captured(case)
    current = _current(case)
    wanted = review_reason(reason)
    body = _kept(current) | {"review": {"reasons": [wanted] if wanted else []}}
    if current.get("rejected_workflows"):
        body["rejected_workflows"] = current["rejected_workflows"]
    return body | {"label": _label("operator", at, by, note)}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same expectation and label, whenever it was set."""

    def norm(body: dict[str, Any]) -> dict[str, Any]:
        out = Expected.model_validate(body).model_dump(mode="json", exclude_defaults=True)
        out.get("label", {}).pop("at", None)
        return out

    return norm(a) == norm(b)


# libyaml's dumper where it is built (the same YAML, several times faster: the
# service writes a captured case's files on its writer thread).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(value: Any, *, documents: bool = False) -> str:
    """`value` as YAML (key order kept); `documents`: each item of it a document."""
    dump = yaml.dump_all if documents else yaml.dump
    return dump(value, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


def _write_atomically(path: Path, text: str) -> None:
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_expected(directory: Path, body: dict[str, Any]) -> bool:
    """Writes `expected.yaml` unless it already says the same; True when written."""
    try:
        Expected.model_validate(body)
    except ValidationError as exc:
        raise LabelError(f"{directory.name}: no valid expected.yaml: {_problems(exc)}") from None
    path = directory / "expected.yaml"
    try:
        current = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
        if isinstance(current, dict) and _same(current, body):
            return False
    except (yaml.YAMLError, ValidationError, ValueError):
        pass  # a broken file is replaced
    _write_atomically(path, dump_yaml(body))
    return True


def captured_texts(
    *,
    description: str,
    captured: dict[str, Any],
    expected: dict[str, Any],
    tags: tuple[str, ...] = (),
    catalog: str | None = None,
) -> dict[str, str]:
    """A new captured case's `case.yaml` and `expected.yaml`, as text.

    `captured` is the provenance block as written (`Provenance`'s fields, JSON
    values), `expected` derived from it (`derived_expected`). The service writes
    its own output unchecked; `write_captured` checks both. The other files
    (request, what the investigation read) are the capture's to write; `catalog`
    names the case's catalog file, when it brings one."""
    meta: dict[str, Any] = {"description": description, "tags": ["captured", *tags]}
    meta |= {"catalog": catalog} if catalog else {}
    meta["captured"] = captured
    return {"case.yaml": dump_yaml(meta), "expected.yaml": dump_yaml(expected)}


def write_captured(
    directory: Path,
    *,
    description: str,
    provenance: Provenance,
    tags: tuple[str, ...] = (),
    catalog: str | None = None,
) -> None:
    """`captured_texts` of a checked `provenance`, written into `directory`."""
    body = derived_expected(decision_of(provenance), outcome_of(provenance), provenance.at)
    try:
        Expected.model_validate(body)
    except ValidationError as exc:
        raise LabelError(f"no valid expected.yaml: {_problems(exc)}") from None
    texts = captured_texts(
        description=description,
        captured=provenance.model_dump(mode="json", exclude_defaults=True),
        expected=body,
        tags=tags,
        catalog=catalog,
    )
    for name, text in texts.items():
        _write_atomically(directory / name, text)


def record_outcome(directory: Path, outcome: dict[str, Any], at: datetime) -> bool:
    """A remediation's outcome arrived for a captured case: kept in `case.yaml`,
    and `expected.yaml` derived again unless an operator labelled it. True
    when `expected.yaml` changed."""
    case_path = directory / "case.yaml"
    meta = yaml.safe_load(case_path.read_text(encoding="utf-8"))
    if not isinstance(meta, dict) or not isinstance(meta.get("captured"), dict):
        raise LabelError(f"{case_path}: not a captured case")
    meta["captured"] = {**meta["captured"], "outcome": outcome}
    try:
        provenance = Provenance.model_validate(meta["captured"])
    except ValidationError as exc:
        raise LabelError(f"{case_path}: {_problems(exc)}") from None
    _write_atomically(case_path, dump_yaml(meta))
    path = directory / "expected.yaml"
    current = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    current = current if isinstance(current, dict) else None
    if current and (current.get("label") or {}).get("source") == "operator":
        return False
    derived = derived_expected(decision_of(provenance), outcome_of(provenance), at, current)
    return write_expected(directory, derived)
