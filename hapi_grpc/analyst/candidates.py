"""The catalog's candidates, one after the other: read, fill (each parameter by its
role, from the evidence), validate, or pass over.

Design notes: docs/internals.md (`analyst/candidates.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import re2

from hapi_grpc.analyst.actions import Objection, Situation, Values, evidence_for
from hapi_grpc.analyst.actions.base import Evidence
from hapi_grpc.analyst.actions.restarts import NoTarget
from hapi_grpc.analyst.amounts import write_bytes, write_cores
from hapi_grpc.analyst.conversation import Step
from hapi_grpc.domain.toolsets.workflow_catalog.tools import VALIDATE_TOOL

__all__ = ["Outcome", "Selection", "fill", "next_step", "respelled"]

_READ_ONLY = NoTarget()
_SUGGESTED_RE = re2.compile(r"did you mean '(?P<value>[^']{1,200})'")


@dataclass(frozen=True)
class Selection:
    """A validated candidate and its parameters."""

    hit: dict[str, Any]
    parameters: dict[str, Any]


@dataclass
class Outcome:
    """What walking the candidates gave: reads or a validation to make, a selection,
    or nothing; `objections` says why candidates were passed over."""

    steps: list[Step] = field(default_factory=list)
    selection: Selection | None = None
    objections: list[str] = field(default_factory=list)
    stop: str = ""  # why no further candidate can be tried (validation attempts spent)


def _module(hit: dict[str, Any]) -> Evidence | None:
    if hit.get("read_only") is True:
        return _READ_ONLY
    return evidence_for(str(hit.get("action_type") or ""))


def _specs(hit: dict[str, Any]) -> list[dict[str, Any]]:
    specs = hit.get("parameters")
    return [s for s in specs if isinstance(s, dict)] if isinstance(specs, list) else []


def next_step(
    hits: list[dict[str, Any]],
    situation: Situation,
    passed_over: Callable[[dict[str, Any]], str | None],
    validations_left: bool,
) -> Outcome:
    """The next step over `hits` (docs/internals.md)."""
    outcome = Outcome()
    running: list[tuple[dict[str, Any], Evidence]] = []
    for hit in hits:
        reason = passed_over(hit)
        module = _module(hit)
        if reason is None and module is None:
            kind = str(hit.get("action_type") or "") or "undeclared"
            reason = (
                f"{hit.get('workflow_id')}: no evidence can be read for action type {kind},"
                " so its premise cannot be shown"
            )
        if reason is not None:
            outcome.objections.append(reason)
            continue
        assert module is not None
        running.append((hit, module))
    pending = [s for hit, module in running for s in module.reads(_at(situation, hit))]
    if pending:
        outcome.steps = list({_key(s): s for s in pending}.values())
        return outcome
    for hit, module in running:
        step = _candidate(hit, module, _at(situation, hit), outcome, validations_left)
        if step is not None or outcome.selection is not None or outcome.stop:
            if step is not None:
                outcome.steps = [step]
            return outcome
    return outcome


def _at(situation: Situation, hit: dict[str, Any]) -> Situation:
    return Situation(situation.subject, situation.findings, situation.reads, hit)


def _key(step: Step) -> str:
    return step[0] + repr(sorted(step[1].items()))


def _candidate(
    hit: dict[str, Any],
    module: Evidence,
    situation: Situation,
    outcome: Outcome,
    validations_left: bool,
) -> Step | None:
    """The validation to make for `hit`, or None once it is selected or passed over."""
    workflow = str(hit.get("workflow_id", ""))
    values = module.values(situation)
    if isinstance(values, Objection):
        outcome.objections.append(f"{workflow}: {values.reason}")
        return None
    filled = fill(_specs(hit), values)
    if filled.missing:
        outcome.objections.append(
            f"{workflow}: the evidence read gives no value for {filled.missing}"
        )
        return None
    checks = [
        e
        for e in situation.reads.results(VALIDATE_TOOL)
        if e.arguments.get("workflow_id") == workflow
    ]
    if not checks:
        return _validate(workflow, filled.parameters, outcome, validations_left)
    verdict, proposed = checks[-1].result, checks[-1].arguments.get("parameters") or {}
    if verdict.get("automation") == "refused":
        outcome.objections.append(str(verdict.get("refused_because", workflow))[:600])
        return None
    if verdict.get("status") == "valid":
        outcome.selection = Selection(hit, dict(verdict.get("parameters") or proposed))
        return None
    if "error" in verdict or verdict.get("attempts_left") == 0:
        outcome.objections.append(f"{workflow}: its parameters could not be validated")
        return None
    fixed = respelled(proposed, verdict.get("errors") or [])
    if fixed is None or any(fixed == c.arguments.get("parameters") for c in checks):
        errors = "; ".join(str(e.get("message", ""))[:200] for e in verdict.get("errors") or [])
        outcome.objections.append(
            f"{workflow}: the values the evidence gives are invalid: {errors}"
        )
        return None
    return _validate(workflow, fixed, outcome, validations_left)


def _validate(
    workflow: str, parameters: dict[str, Any], outcome: Outcome, validations_left: bool
) -> Step | None:
    if not validations_left:
        outcome.stop = "the parameter validation attempts are spent"
        return None
    return VALIDATE_TOOL, {"workflow_id": workflow, "parameters": parameters}


@dataclass(frozen=True)
class Filled:
    """The parameters filled, or the name of the first required one with no value."""

    parameters: dict[str, Any]
    missing: str = ""


def _value(role: str, spec: dict[str, Any], values: Values) -> Any:
    if role == "memory_limit" and "memory_limit_bytes" in values:
        return write_bytes(int(values["memory_limit_bytes"]), spec)
    if role == "size" and "size_bytes" in values:
        return write_bytes(int(values["size_bytes"]), spec)
    if role == "cpu_limit" and "cpu_cores" in values:
        return write_cores(float(values["cpu_cores"]), spec)
    value = values.get(role)
    if value is None:
        return None
    kind = spec.get("type")
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def fill(specs: list[dict[str, Any]], values: Values) -> Filled:
    """The parameters of one workflow from the evidence's values by role."""
    filled: dict[str, Any] = {}
    for spec in specs:
        name = str(spec.get("name", ""))
        role = str(spec.get("role") or "")
        value = _value(role, spec, values) if role else None
        if value is None:
            if spec.get("required"):
                return Filled(filled, name)
            continue
        filled[name] = value
    return Filled(filled)


def respelled(proposed: dict[str, Any], errors: list[Any]) -> dict[str, Any] | None:
    """The proposal with the validator's respellings applied; None when an error
    suggests none (then a human looks at it: the values came from the evidence)."""
    fixed = dict(proposed)
    for error in errors:
        if not isinstance(error, dict):
            return None
        match = _SUGGESTED_RE.search(str(error.get("message", ""))[:2000])
        name = str(error.get("parameter", ""))
        if match is None or name not in fixed:
            return None
        fixed[name] = match.group("value")
    return fixed if fixed != proposed else None
