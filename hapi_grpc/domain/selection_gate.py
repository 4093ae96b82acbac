"""The gate every selection passes before it may be automated.

A selection whose parameters are valid is automated only when the gate lets
it through. The gate runs, in order:

1. the workflow's declared preconditions on what this investigation observed
   and its invariants on the parameters (`domain.preconditions`). For a
   workflow that changes the cluster, a condition that is unknown (not
   observed) counts as not holding; a `read_only` workflow is stopped only by
   a condition that is observed to be false;
2. every extra `SelectionCheck` the service was composed with (`app.py`), in
   order: any check over (incident, observed state, selected workflow,
   parameters) that may veto automation with a reason and a message, e.g. an
   operator policy.

The first veto wins. Vetoes are kept (`vetoes`) so the result names them,
and so are the preconditions a search result was already seen to fail
(`refutations`), for a decider that stood down without validating.
Extra checks may run more than once per investigation (the validation tool,
then the final check): they must not change anything when they run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hapi_grpc.domain.catalog import Declarations, SearchHit
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.preconditions import (
    Bound,
    ConditionResult,
    evaluate,
    incident_activation,
)
from hapi_grpc.domain.result import HumanReviewReason
from hapi_grpc.domain.toolsets.shared_texts import SharedTexts

__all__ = ["Candidate", "SelectionCheck", "SelectionGate", "Veto"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A selection about to be automated, as an extra check sees it."""

    incident: Incident
    observed: Observed
    workflow: Declarations  # the catalog's declarations (WorkflowSchema or SearchHit)
    workflow_id: str
    hit: SearchHit | None  # the search result (title, risk) when known
    parameters: Mapping[str, Any]  # validated and sanitized


@dataclass(frozen=True, slots=True)
class Veto:
    """Why a selection is not automated: the review reason and a message naming the cause."""

    reason: HumanReviewReason
    message: str  # names the condition or rule and the observed value
    source: str = ""  # e.g. "precondition:container_oomkilled", "policy:<rule>"


# An alert storm's investigations refute the same search results and veto the same
# selection in the same words: held once (~2.7 kB per investigation otherwise).
_SHARED_REASONS = SharedTexts(max_chars=1 << 18, min_chars=128)

SelectionCheck = Callable[[Candidate], Awaitable[Veto | None]]
"""An extra check: None lets the selection through; a `Veto` sends it to review."""


@dataclass(slots=True)
class SelectionGate:
    """One investigation's gate (see module docstring)."""

    incident: Incident
    observed: Observed
    checks: Sequence[SelectionCheck] = ()
    vetoes: list[Veto] = field(default_factory=list)
    refutations: dict[str, str] = field(default_factory=dict)  # workflow id -> why
    # Inside `reusing()`: the last variables bound (and their activation, once built),
    # with the record view and parameters they hold. Nothing converted is kept beyond
    # it, nor the incident's view: that would cost memory (~6 kB for an empty record,
    # ~120 kB for a few pods) for every investigation in flight.
    _reuse: bool = False
    _bound: tuple[dict[str, Any], dict[str, Any], Bound] | None = None

    @contextmanager
    def reusing(self) -> Iterator[None]:
        """Evaluations inside share one activation while the record and parameters
        stay the same (the CEL runtime converts a variable once per activation,
        ~340 us for a few pods; an evaluation after that takes ~5 us)."""
        self._reuse = True
        try:
            yield
        finally:
            self._reuse = False
            self._bound = None

    def _activation(self, params: Mapping[str, Any]) -> Bound:
        """The variables bound for `params`; a changed record has a new view object."""
        view = self.observed.activation()
        last = self._bound
        if last is None or last[0] is not view or last[1] != params:
            plain = dict(params)
            last = (view, plain, Bound(partial(incident_activation, self.incident), view, plain))
            if self._reuse:
                self._bound = last
        return last[2]

    def conditions(
        self, declared: Declarations, params: Mapping[str, Any]
    ) -> list[ConditionResult]:
        """Every declared condition evaluated on what was observed so far."""
        bound = self._activation(params)
        return evaluate(
            [c.declared() for c in declared.preconditions],
            [c.declared() for c in declared.invariants],
            incident={},
            observed=bound.observed,
            params=params,
            bound=bound,
        )

    def failed(self, declared: Declarations, params: Mapping[str, Any]) -> list[ConditionResult]:
        """The conditions that stop automation (unknown ones too, unless read-only)."""
        return [
            r
            for r in self.conditions(declared, params)
            if r.holds is False or (r.holds is None and not declared.read_only)
        ]

    def refuted(self, workflow_id: str, declared: Declarations) -> list[ConditionResult]:
        """Preconditions that do not hold on what was read so far (no parameters needed)."""
        # Runs for every search hit: invariants (which need parameters) and unknown
        # preconditions are not evaluated or explained, as none of them is reported.
        bound = self._activation({})
        found = evaluate(
            [c.declared() for c in declared.preconditions],
            (),
            incident={},
            observed=bound.observed,
            params={},
            only_false=True,
            bound=bound,
        )
        if found:
            self.refutations[workflow_id] = _SHARED_REASONS.share(
                f"{workflow_id}: " + "; ".join(r.describe() for r in found[:3])
            )
        else:
            self.refutations.pop(workflow_id, None)
        return found

    async def check(
        self,
        workflow_id: str,
        declared: Declarations,
        params: Mapping[str, Any],
        hit: SearchHit | None = None,
    ) -> Veto | None:
        """The first veto of the declared conditions and the extra checks; None to automate."""
        failed = self.failed(declared, params)
        veto: Veto | None = None
        if failed:
            veto = Veto(
                HumanReviewReason.PRECONDITION_NOT_MET,
                _SHARED_REASONS.share(
                    f"{workflow_id}: " + "; ".join(r.describe() for r in failed[:5])
                ),
                f"{failed[0].kind}:{failed[0].name}",
            )
        else:
            candidate = Candidate(
                self.incident, self.observed, declared, workflow_id, hit, dict(params)
            )
            for extra in self.checks:
                veto = await extra(candidate)
                if veto is not None:
                    break
        if veto is not None:
            self.vetoes.append(veto)
        return veto
