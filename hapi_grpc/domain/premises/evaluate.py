"""Evaluating a workflow's `Premises` on what one investigation observed.

The pack's conditions see the roles (`params.namespace`, ...) and the `workflow`
variable; the workflow's own conditions see its parameters by name. Conditions run
on CEL activations (`preconditions.Bound`), which convert the record once each; a
caller may reuse them across calls (`BoundFor`): the selection gate
(`selection_gate.SelectionGate`, the one caller) keeps the last ones while the
record is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hapi_grpc.domain.cel_cost import CelLimits
from hapi_grpc.domain.preconditions import Bound, ConditionResult, evaluate
from hapi_grpc.domain.premises.book import Premises

__all__ = ["BoundFor", "LateBound", "evaluate_premises"]

BoundFor = Callable[[Mapping[str, Any], Mapping[str, Any] | None, frozenset[str] | None], Bound]
"""(params, workflow, fields of `observed` read) -> the variables bound for them (with
the incident and the record)."""


class LateBound(Bound):
    """Variables whose parameters and workflow are given after the record is bound.

    A search's results and the check of the one selected share this: the runtime
    converts each variable on its first use, so the record converted while the
    search results' preconditions (which read neither) were evaluated is reused by
    the check, once `fill` gives the parameters. `fill` works once, and only while
    no expression has read them; it checks that the runtime sees what was given.
    """

    __slots__ = ("open",)

    def __init__(
        self,
        incident: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        observed: Mapping[str, Any],
        fields: frozenset[str] | None,
    ) -> None:
        super().__init__(incident, observed, {}, {}, fields)
        self.open = True

    def value(self, expression: str, limits: CelLimits | None = None) -> tuple[bool, Any]:
        if self.open and ("params" in expression or "workflow" in expression):
            self.open = False  # converted now, empty: no longer fillable
        return super().value(expression, limits)

    def fill(self, params: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> bool:
        """Bind `params` and `workflow`; False when it is too late to."""
        if not self.open:
            return False
        self.open = False
        self.params.update(params)
        self.workflow.update(workflow or {})
        ok, seen = self.value(_SIZES)
        return ok and seen == [len(self.params), len(self.workflow)]


_SIZES = "[size(params), size(workflow)]"


def evaluate_premises(
    premises: Premises,
    bound_for: BoundFor,
    params: Mapping[str, Any],
    *,
    only_false: bool = False,
    preconditions_only: bool = False,
    held: frozenset[str] = frozenset(),
) -> list[ConditionResult]:
    """Every condition of `premises`, preconditions first, the pack's before the
    workflow's own; `only_false` keeps the ones observed to be false;
    `preconditions_only` skips the invariants (no parameters yet); `held` names
    preconditions already seen to hold on the same record (not evaluated again).

    Preconditions read neither parameters nor the workflow, so every workflow's share
    one activation (`bound_for({}, None, ...)`), bound with the record's fields any
    pack's precondition reads. The invariants of the pack and of the
    workflow share one too: `params` holds the parameters by name and the roles by
    theirs, unless a parameter is named like a role and holds another value (then
    each set gets its own)."""
    preconditions = tuple(
        d for d in (*premises.pack_preconditions, *premises.own_preconditions) if d.name not in held
    )
    if preconditions_only:
        if not preconditions:
            return []
        bound = bound_for({}, None, premises.precondition_fields)
        return evaluate(preconditions, (), bound, only_false=only_false)
    roles = premises.binding.view(params) if premises.pack_invariants else {}
    if any(k in params and params[k] != v for k, v in roles.items()):
        return _apart(premises, bound_for, params, roles, only_false)
    invariants = (*premises.pack_invariants, *premises.own_invariants)
    if not preconditions and not invariants:
        return []
    bound = bound_for({**params, **roles}, premises.workflow, premises.fields)
    return evaluate(preconditions, invariants, bound, only_false=only_false)


def _apart(
    premises: Premises,
    bound_for: BoundFor,
    params: Mapping[str, Any],
    roles: Mapping[str, Any],
    only_false: bool,
) -> list[ConditionResult]:
    """The pack's conditions on the roles, the workflow's own on its parameters."""
    results: list[ConditionResult] = []
    for pre, inv, values in (
        (premises.pack_preconditions, premises.pack_invariants, roles),
        (premises.own_preconditions, premises.own_invariants, params),
    ):
        if pre or inv:
            bound = bound_for(values, premises.workflow, premises.fields)
            results += evaluate(pre, inv, bound, only_false=only_false)
    return results
