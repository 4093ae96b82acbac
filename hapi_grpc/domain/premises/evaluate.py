"""Evaluating a workflow's `Premises` on what one investigation observed.

The pack's conditions see the roles (`params.namespace`, ...) and the `workflow`
variable; the workflow's own conditions see its parameters by name. Each set runs on
one CEL activation (`preconditions.Bound`), which a caller may reuse across calls
(`BoundFor`): the selection gate keeps the last ones while the record is unchanged.

    premises = book.premises(hit.workflow_id, hit, parameters=params)
    results = evaluate_premises(premises, bound_over(incident, observed), params)
    failing = [r for r in results if r.holds is not True]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.preconditions import Bound, ConditionResult, evaluate, incident_activation
from hapi_grpc.domain.premises.book import Premises

__all__ = ["BoundFor", "bound_over", "evaluate_premises"]

BoundFor = Callable[[Mapping[str, Any], Mapping[str, Any] | None], Bound]
"""(params, workflow) -> the variables bound for them (with the incident and record)."""


def bound_over(incident: Incident, observed: Observed) -> BoundFor:
    """A `BoundFor` over `incident` and the record as it is now (nothing reused)."""
    view = observed.activation()
    build = partial(incident_activation, incident)

    def bound_for(params: Mapping[str, Any], workflow: Mapping[str, Any] | None) -> Bound:
        return Bound(build, view, dict(params), workflow)

    return bound_for


def evaluate_premises(
    premises: Premises,
    bound_for: BoundFor,
    params: Mapping[str, Any],
    *,
    only_false: bool = False,
    preconditions_only: bool = False,
) -> list[ConditionResult]:
    """Every condition of `premises`, the pack's first; `only_false` keeps the ones
    observed to be false; `preconditions_only` skips the invariants (no parameters)."""
    results: list[ConditionResult] = []
    pack_inv = () if preconditions_only else premises.pack_invariants
    if premises.pack_preconditions or pack_inv:
        bound = bound_for(premises.binding.view(params), premises.workflow)
        results += evaluate(
            premises.pack_preconditions,
            pack_inv,
            incident={},
            observed=bound.observed,
            params=bound.params,
            only_false=only_false,
            bound=bound,
        )
    own_inv = () if preconditions_only else premises.own_invariants
    if premises.own_preconditions or own_inv:
        bound = bound_for(params, None)
        results += evaluate(
            premises.own_preconditions,
            own_inv,
            incident={},
            observed=bound.observed,
            params=bound.params,
            only_false=only_false,
            bound=bound,
        )
    return results
