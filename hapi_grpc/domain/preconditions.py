"""Catalog preconditions and parameter invariants: CEL over what the service observed.

Design notes: docs/internals.md (`domain/preconditions.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import re2

from hapi_grpc.domain.cel_cost import CelLimits, within_inputs
from hapi_grpc.domain.cel_programs import compile_expression, environment
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.observed import EMPTY_VIEW
from hapi_grpc.domain.sensitive import redact, redaction_generation

__all__ = [
    "Bound",
    "ConditionResult",
    "Declared",
    "evaluate",
    "incident_activation",
    "observed_fields",
]

_SHOWN = 300


@dataclass(frozen=True, slots=True)
class Declared:
    """One declared condition: its name, CEL expression and what to show when it fails."""

    name: str
    expression: str
    message: str = ""
    show: str = ""  # CEL: the observed value a failure names
    limits: CelLimits | None = None  # from outside: the bounds it was compiled under


@dataclass(frozen=True, slots=True)
class ConditionResult:
    """A condition evaluated: True, False, or None when unknown (counts as False)."""

    name: str
    kind: str  # "precondition" or "invariant"
    holds: bool | None
    detail: str  # the observed value (from `show`) or why it is unknown
    message: str = ""

    def describe(self) -> str:
        what = f"{self.kind} {self.name!r}"
        if self.message:
            what += f" ({self.message})"
        state = "not observed" if self.holds is None else "does not hold"
        return f"{what} {state}; observed: {self.detail}"


def _value(result: Any) -> tuple[bool, Any]:
    """(ok, plain value) of a CEL result; an error value is not ok."""
    if result.type().name().lower() == "error":
        return False, str(result.value())
    return True, result.plain_value()


def _shown(value: Any) -> str:
    return redact(" ".join(str(_ordered(value)).split()))[:_SHOWN]


def _ordered(value: Any) -> Any:
    """`value` with every map's keys sorted: CEL's maps have no order, and a shown
    value must read the same each time (warnings, kept texts)."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: (type(kv[0]).__name__, str(kv[0])))
        return {k: _ordered(v) for k, v in items}
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def _one(
    declared: Declared, kind: str, bound: Bound, only_false: bool = False
) -> ConditionResult | None:
    if bound.empty and _observed_only(declared.expression) and _observed_only(declared.show):
        return _one_on_empty(declared, kind, only_false, redaction_generation())
    return _evaluated(declared, kind, bound, only_false)


@lru_cache(maxsize=4096)
def _one_on_empty(
    declared: Declared, kind: str, only_false: bool, generation: int
) -> ConditionResult | None:
    """`_evaluated` on the empty record; `generation` (of the registered secrets the
    value shown was redacted with) is part of the key, so a new secret is applied."""
    return _evaluated(declared, kind, Bound({}, EMPTY_VIEW, {}), only_false)


def _evaluated(
    declared: Declared, kind: str, bound: Bound, only_false: bool
) -> ConditionResult | None:
    ok, value = bound.value(declared.expression, declared.limits)
    if ok and value is True:
        return (
            None if only_false else ConditionResult(declared.name, kind, True, "", declared.message)
        )
    if only_false and (not ok or value is not False):
        return None  # unknown: not a refutation, so its `show` is not worth evaluating
    detail = ""
    if declared.show:
        shown_ok, shown = bound.value(declared.show, declared.limits)
        detail = _shown(shown) if shown_ok else "nothing"
    if not ok:
        return ConditionResult(
            declared.name, kind, None, detail or f"unknown ({_shown(value)})", declared.message
        )
    if value is not False:
        detail = detail or f"the expression gave {_shown(value)}, not a boolean"
    return ConditionResult(declared.name, kind, False, detail or "false", declared.message)


@lru_cache(maxsize=4096)
def _observed_only(expression: str) -> bool:
    # By text: a CEL variable is only reached by its name (the environment sets no
    # container), so an expression that uses one contains the word; the word
    # elsewhere (a string literal, a field name) only means evaluating. The
    # runtime's compiled program exposes no reference map short of decoding its
    # serialized CheckedExpr.
    return (
        "incident" not in expression and "params" not in expression and "workflow" not in expression
    )


@lru_cache(maxsize=4096)  # bounded like the compiled programs
def _on_empty(expression: str) -> tuple[bool, Any]:
    """The value of an expression over `observed` alone on the empty record."""
    return _run(compile_expression(expression), Bound({}, EMPTY_VIEW, {}).activation())


def _run(program: Any, activation: Any) -> tuple[bool, Any]:
    """(ok, plain value); an error the runtime raises instead of returning one
    (the iteration budget spent) is not ok either."""
    try:
        return _value(program.eval(activation))
    except RuntimeError as exc:
        return False, str(exc).removeprefix("INTERNAL: ").split(" [", 1)[0]


_FIELD = re2.compile(r"\bobserved\.([a-z_]+)")
_USE = re2.compile(r"\bobserved\b")


@lru_cache(maxsize=4096)
def observed_fields(expressions: tuple[str, ...]) -> frozenset[str] | None:
    """The fields of `observed` the expressions read; None when one reads it otherwise
    than by a field (then all of it). By text, like `_observed_only`."""
    fields: set[str] = {"evidence"}
    for expression in expressions:
        named = _FIELD.findall(expression)
        if len(named) != len(_USE.findall(expression)):
            return None
        fields.update(named)
    return frozenset(fields)


class Bound:
    """The variables of one evaluation; their CEL activation is built on first need,
    and not at all when every expression evaluated has its empty-record value.

    `fields`: the fields of `observed` the expressions evaluated on it read (None:
    all). The runtime converts a variable whole on first use and keeps it, and
    converting the record is most of an evaluation's cost, so only those are bound,
    and a caller reuses a `Bound` over an unchanged record. `params` and `workflow`
    are copied here and bound themselves: a `LateBound` fills them in place before
    an expression first reads them."""

    __slots__ = (
        "_activation",
        "_incident",
        "_within",
        "empty",
        "fields",
        "observed",
        "params",
        "workflow",
    )

    def __init__(
        self,
        incident: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        observed: Mapping[str, Any],
        params: Mapping[str, Any],
        workflow: Mapping[str, Any] | None = None,
        fields: frozenset[str] | None = None,
    ) -> None:
        self._incident = incident  # or what builds it, called only if needed
        self.observed = observed
        self.params = dict(params)
        self.workflow = dict(workflow or {})
        self.fields = fields
        self.empty = observed is EMPTY_VIEW
        self._activation: Any = None
        self._within: dict[CelLimits, bool] = {}

    def covers(self, fields: frozenset[str] | None) -> bool:
        """Whether expressions reading `fields` may be evaluated on this one."""
        return self.fields is None or (fields is not None and fields <= self.fields)

    def activation(self) -> Any:
        if self._activation is None:
            incident = self._incident() if callable(self._incident) else self._incident
            observed = self.observed
            if self.fields is not None:
                observed = {k: observed[k] for k in self.fields if k in observed}
            self._activation = environment().Activation(
                {
                    "incident": dict(incident),
                    "observed": dict(observed),
                    "params": self.params,
                    "workflow": self.workflow,
                }
            )
        return self._activation

    def value(self, expression: str, limits: CelLimits | None = None) -> tuple[bool, Any]:
        """(ok, plain value) of `expression` on these variables; with `limits`,
        not evaluated (unknown) when the inputs are larger than they allow."""
        if self.empty and _observed_only(expression):
            return _on_empty(expression)
        if limits is not None and not self.within(limits):
            return False, "inputs larger than expressions from outside may read"
        return _run(compile_expression(expression, limits), self.activation())

    def within(self, limits: CelLimits) -> bool:
        """Whether the request's and the model's values (incident, params) are within
        `limits`; `observed` is bounded where it is recorded."""
        if limits not in self._within:
            incident = self._incident() if callable(self._incident) else self._incident
            self._incident = incident
            values = {"incident": incident, "params": self.params}
            self._within[limits] = within_inputs(values, limits)
        return self._within[limits]


def evaluate(
    preconditions: Sequence[Declared],
    invariants: Sequence[Declared],
    bound: Bound,
    *,
    only_false: bool = False,
) -> list[ConditionResult]:
    """Every declared condition evaluated on `bound` (its activation shared),
    preconditions first.

    `only_false` keeps just the conditions observed to be false (a refutation),
    and explains (`show`) only those.
    """
    results = [_one(d, "precondition", bound, only_false) for d in preconditions] + [
        _one(d, "invariant", bound, only_false) for d in invariants
    ]
    return [r for r in results if r is not None]


def incident_activation(incident: Incident) -> dict[str, Any]:
    """The incident as CEL's `incident`: the facts it reports, strings and numbers only."""
    signal = incident.signal
    return {
        "signal_type": signal.signal_type,
        "severity": str(signal.severity or ""),
        "component": signal.component,
        "alert_name": signal.alert_name,
        "namespace": signal.namespace,
        "resource_kind": signal.resource_kind,
        "resource_name": signal.resource_name,
        "environment": incident.business.environment,
        "priority": incident.business.priority,
        "cluster_name": incident.cluster.cluster_name,
        "signal_labels": dict(incident.cluster.signal_labels),
        "custom_labels": {k: list(v) for k, v in incident.enrichment.custom_labels.items()},
        "is_duplicate": incident.deduplication.is_duplicate,
        "occurrence_count": incident.deduplication.occurrence_count,
        "is_storm": incident.storm.is_storm,
        # Epoch seconds, as the record's times: 0.0 when the incident gives none.
        "fired_at": _epoch(incident.error_details.firing_time),
    }


def _epoch(moment: datetime | None) -> float:
    return moment.timestamp() if moment is not None else 0.0
