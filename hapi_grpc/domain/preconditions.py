"""Catalog preconditions and parameter invariants: CEL over what the service observed.

A workflow declares, as CEL expressions (the language of Kubernetes admission
policies and CRD validation rules), the premises it needs (`preconditions`)
and the relations its parameters must keep (`invariants`). Expressions see
three variables: `incident` (the request's facts), `observed` (the record the
tools filled, `hapi_grpc.domain.observed`) and `params` (the proposed
parameters), and one function, `quantity(string) -> double`, the Kubernetes
quantity parser. Each is compiled and type-checked once, when the catalog
entry is parsed; a bad expression fails the load.

An expression that cannot be evaluated (a field that was not observed, a
quantity that does not parse) is *unknown*, and unknown counts as not
holding: a premise nobody saw is no premise.

On an empty record (nothing read: every investigation without a cluster) an
expression that names neither `incident` nor `params` has one value, computed
once per process; the others are evaluated as always.

Runtime: Google's CEL C++ runtime through `cel-expr-python` (measured against
`cel-python` and `common-expression-language`; see docs/policy.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from cel_expr_python import cel

from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.observed import EMPTY_VIEW
from hapi_grpc.domain.quantity import QuantityError, parse_quantity
from hapi_grpc.domain.sensitive import redact, redaction_generation

__all__ = [
    "Bound",
    "ConditionResult",
    "Declared",
    "bind",
    "check_expression",
    "compile_expression",
    "evaluate",
    "incident_activation",
]

_SHOWN = 300


@lru_cache(maxsize=1024)  # the same few limits are compared again and again
def _quantity(text: str) -> float:
    try:
        return float(parse_quantity(text))
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


@cache
def _env(strings: bool = False) -> Any:
    """The environment; with `strings`, also the strings extension (join, lowerAscii,
    ...), as in Kubernetes' CEL. That extension is a native library of its own (~3.5 MB
    resident once loaded), so it is loaded only for a catalog expression that uses it."""
    extensions = []
    if strings:
        from cel_expr_python.ext.ext_strings import ExtStrings

        extensions = [ExtStrings()]
    return cel.NewEnv(
        variables={
            "incident": cel.Type.DYN,
            "observed": cel.Type.DYN,
            "params": cel.Type.DYN,
            # The workflow judged (`id`, `action_type`, `gitops`): the premise packs'
            # conditions read it (`domain.premises`).
            "workflow": cel.Type.DYN,
        },
        extensions=extensions,
        functions=[
            cel.FunctionDecl(
                "quantity",
                [
                    cel.Overload(
                        "quantity_string", cel.Type.DOUBLE, [cel.Type.STRING], impl=_quantity
                    )
                ],
            )
        ],
    )


def check_expression(expression: str) -> None:
    """Compile and type-check without keeping the program; raises ValueError."""
    _compile(expression)


@lru_cache(maxsize=4096)  # bounded: Data Storage may send any number of expressions
def compile_expression(expression: str) -> Any:
    """The compiled, type-checked program, kept; raises ValueError naming the problem."""
    return _compile(expression)


def _compile(expression: str) -> Any:
    try:
        return _env().compile(expression)
    except RuntimeError:
        pass  # perhaps a function of the strings extension: the language includes it
    try:
        # A program of either environment evaluates on an activation of the first.
        return _env(strings=True).compile(expression)
    except RuntimeError as exc:
        raise ValueError(f"CEL expression does not compile: {exc}") from None


@dataclass(frozen=True, slots=True)
class Declared:
    """One declared condition: its name, CEL expression and what to show when it fails."""

    name: str
    expression: str
    message: str = ""
    show: str = ""  # CEL: the observed value a failure names


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
    ok, value = bound.value(declared.expression)
    if ok and value is True:
        return (
            None if only_false else ConditionResult(declared.name, kind, True, "", declared.message)
        )
    if only_false and (not ok or value is not False):
        return None  # unknown: not a refutation, so its `show` is not worth evaluating
    detail = ""
    if declared.show:
        shown_ok, shown = bound.value(declared.show)
        detail = _shown(shown) if shown_ok else "nothing"
    if not ok:
        return ConditionResult(
            declared.name, kind, None, detail or f"unknown ({_shown(value)})", declared.message
        )
    if value is not False:
        detail = detail or f"the expression gave {_shown(value)}, not a boolean"
    return ConditionResult(declared.name, kind, False, detail or "false", declared.message)


def bind(
    *,
    incident: Mapping[str, Any],
    observed: Mapping[str, Any],
    params: Mapping[str, Any],
    workflow: Mapping[str, Any] | None = None,
) -> Any:
    """The CEL activation of the variables. The runtime converts a variable on
    first use and keeps it, so reusing an activation over an unchanged record saves
    converting the record again (most of an evaluation's cost)."""
    return _env().Activation(
        {
            "incident": dict(incident),
            "observed": dict(observed),
            "params": dict(params),
            "workflow": dict(workflow or {}),
        }
    )


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
    empty = bind(incident={}, observed=EMPTY_VIEW, params={}, workflow={})
    return _value(compile_expression(expression).eval(empty))


class Bound:
    """The three variables of one evaluation; their CEL activation is built on first
    need, and not at all when every expression evaluated has its empty-record value."""

    __slots__ = ("_activation", "_incident", "empty", "observed", "params", "workflow")

    def __init__(
        self,
        incident: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        observed: Mapping[str, Any],
        params: Mapping[str, Any],
        workflow: Mapping[str, Any] | None = None,
    ) -> None:
        self._incident = incident  # or what builds it, called only if needed
        self.observed = observed
        self.params = params
        self.workflow = workflow
        self.empty = observed is EMPTY_VIEW
        self._activation: Any = None

    def activation(self) -> Any:
        if self._activation is None:
            incident = self._incident() if callable(self._incident) else self._incident
            self._activation = bind(
                incident=incident,
                observed=self.observed,
                params=self.params,
                workflow=self.workflow,
            )
        return self._activation

    def value(self, expression: str) -> tuple[bool, Any]:
        """(ok, plain value) of `expression` on these variables."""
        if self.empty and _observed_only(expression):
            return _on_empty(expression)
        return _value(compile_expression(expression).eval(self.activation()))


def evaluate(
    preconditions: Sequence[Declared],
    invariants: Sequence[Declared],
    *,
    incident: Mapping[str, Any],
    observed: Mapping[str, Any],
    params: Mapping[str, Any],
    only_false: bool = False,
    bound: Bound | None = None,
) -> list[ConditionResult]:
    """Every declared condition evaluated on one activation, preconditions first.

    `only_false` keeps just the conditions observed to be false (a refutation),
    and explains (`show`) only those. `bound` is a `Bound` over the same three
    variables, reused (with its activation) instead of a new one.
    """
    if not preconditions and not invariants:
        return []
    if bound is None:
        bound = Bound(incident, observed, params)
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
    }
