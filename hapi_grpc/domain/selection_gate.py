"""The gate every selection passes before it may be automated.

Design notes: docs/internals.md (`domain/selection_gate.py`).
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
from hapi_grpc.domain.observed.facts import ObservedView
from hapi_grpc.domain.preconditions import Bound, ConditionResult, incident_activation
from hapi_grpc.domain.premises import PremiseBook, Premises, bundled_book, evaluate_premises
from hapi_grpc.domain.premises.evaluate import BoundFor, LateBound
from hapi_grpc.domain.result import HumanReviewReason
from hapi_grpc.domain.toolsets.shared_texts import SharedTexts

__all__ = ["AllowUnverified", "Candidate", "SelectionCheck", "SelectionGate", "Veto", "unverified"]


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

_MAX_HELD = 64  # search results remembered per investigation

SelectionCheck = Callable[[Candidate], Awaitable[Veto | None]]
"""An extra check: None lets the selection through; a `Veto` sends it to review."""

AllowUnverified = Callable[[str, str], Awaitable[bool]]
"""(workflow id, action type) -> whether the operator's policy automates it unverified."""


def unverified(premises: Premises) -> str:
    """Why an unverified workflow is not automated (names "no premise" and the type)."""
    action_type = premises.action_type
    why = "it has no premise pack" if action_type else "the workflow declares no action type"
    return (
        f"{premises.workflow_id}: no premise declared for action type {action_type!r}"
        f" ({why}, and the workflow declares no preconditions or invariants): a change"
        " whose premise cannot be checked is not automated"
    )


@dataclass(slots=True)
class SelectionGate:
    """One investigation's gate (docs/internals.md)."""

    incident: Incident
    observed: Observed
    checks: Sequence[SelectionCheck] = ()
    premises: PremiseBook | None = None  # None: the shipped packs
    allow_unverified: AllowUnverified | None = None  # the operator's policy
    vetoes: list[Veto] = field(default_factory=list)
    refutations: dict[str, str] = field(default_factory=dict)  # workflow id -> why
    # Inside `reusing()`: the last variables bound (and their activations, once built),
    # with the record view, parameters and workflow they hold: one for a pack's roles,
    # one for the parameters by name. Nothing converted is kept beyond it, nor the
    # incident's view: that would cost memory (~6 kB for an empty record, ~120 kB for
    # a few pods) for every investigation in flight.
    _reuse: bool = False
    _bound: list[tuple[ObservedView, dict[str, Any], Any, Bound]] = field(default_factory=list)
    # The last selection judged and what stopped it, with the record's version: the
    # validation tool and the final check judge the same selection on the same record.
    _judged: tuple[int, str, dict[str, Any], Premises, list[ConditionResult]] | None = None
    # Per workflow, the preconditions its search result was seen to meet, with the
    # record's version: a check on the same record does not evaluate them again.
    _held: dict[str, tuple[int, frozenset[str]]] = field(default_factory=dict)
    # The search results' variables, converted with the record's fields their whole
    # premises read, awaiting the parameters of the one checked next (`LateBound`).
    _late: tuple[int, LateBound] | None = None
    # Inside `reusing()`: each search result's premises, asked for by `prepare`, by
    # `refuted` and by the result's summary alike (nothing kept beyond it).
    _premises: dict[str, tuple[Declarations, Premises]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.premises is None:
            self.premises = bundled_book()

    @contextmanager
    def reusing(self) -> Iterator[None]:
        """Evaluations inside share their activations while the record and parameters
        stay the same (the CEL runtime converts a variable once per activation,
        ~340 us for a few pods; an evaluation after that takes ~5 us)."""
        self._reuse = True
        try:
            yield
        finally:
            self._reuse = False
            self._bound = []
            self._premises = {}

    def _activation(
        self,
        params: Mapping[str, Any],
        workflow: Mapping[str, Any] | None = None,
        fields: frozenset[str] | None = None,
    ) -> Bound:
        """The variables bound for `params` (and `workflow`), with at least the record's
        `fields` (None: all); a changed record has a new view object."""
        view = self.observed.activation()
        kept = None
        for seen, plain, flow, bound in self._bound:
            if seen is view and plain == params and flow == workflow:
                if bound.covers(fields):
                    return bound
                kept = bound
        if kept is not None and kept.fields is not None and fields is not None:
            fields = kept.fields | fields  # one activation for both, converted once
        bound = Bound(partial(incident_activation, self.incident), view, params, workflow, fields)
        if self._reuse:
            self._bound = [b for b in self._bound if b[0] is view and b[3] is not kept][-1:]
            self._bound.append((view, bound.params, workflow, bound))
        return bound

    def _check_bound(self) -> BoundFor:
        """Variables for a check: the search's, converted already, when the record has
        not changed since and they cover what the check reads; else new ones."""
        late = self._late
        self._late = None
        if late is None or late[0] != self.observed.version:
            return self._activation
        bound = late[1]

        def bound_for(
            params: Mapping[str, Any],
            workflow: Mapping[str, Any] | None,
            fields: frozenset[str] | None,
        ) -> Bound:
            if bound.covers(fields) and bound.fill(params, workflow):
                return bound
            return self._activation(params, workflow, fields)

        return bound_for

    def premises_of(
        self,
        workflow_id: str,
        declared: Declarations,
        params: Mapping[str, Any] | None = None,
        hit: SearchHit | None = None,
    ) -> Premises:
        """The premise `workflow_id` must meet: its type's pack and its declarations."""
        # Without parameters, and with the search result as the declarations, the
        # same question is asked again for each result of one search.
        remembered = self._reuse and params is None and (hit is None or hit is declared)
        if remembered:
            seen = self._premises.get(workflow_id)
            if seen is not None and seen[0] is declared:
                return seen[1]
        source = hit if hit is not None else declared
        labels = source.detected_labels if isinstance(source, SearchHit) else {}
        assert self.premises is not None
        premises = self.premises.premises(workflow_id, declared, params or (), labels)
        if remembered:
            self._premises[workflow_id] = (declared, premises)
        return premises

    def _failing(self, premises: Premises, params: Mapping[str, Any]) -> list[ConditionResult]:
        version = self.observed.version
        last = self._judged
        if (
            last is not None
            and last[0] == version
            and last[1] == premises.workflow_id
            and last[3] is premises
            and last[2] == params
        ):
            return list(last[4])
        seen = self._held.get(premises.workflow_id)
        held = seen[1] if seen is not None and seen[0] == version else frozenset()
        failed = [
            r
            for r in evaluate_premises(premises, self._check_bound(), params, held=held)
            if r.holds is False or (r.holds is None and not premises.read_only)
        ]
        self._judged = (version, premises.workflow_id, dict(params), premises, failed)
        return list(failed)

    def prepare(self, hits: Sequence[tuple[str, Declarations]]) -> None:
        """Inside `reusing()`, before `refuted` runs for each of `hits`: bind once the
        record's fields all their premises read, so their preconditions share one
        activation, and the check of the one selected next (on the same record) too."""
        fields: frozenset[str] | None = frozenset()
        for workflow_id, declared in hits:
            wanted = self.premises_of(workflow_id, declared).fields
            fields = None if wanted is None or fields is None else fields | wanted
        view = self.observed.activation()
        late = LateBound(partial(incident_activation, self.incident), view, fields)
        self._late = (self.observed.version, late)
        self._bound = [(view, {}, None, late)]

    def refuted(self, workflow_id: str, declared: Declarations) -> list[ConditionResult]:
        """Preconditions that do not hold on what was read so far (no parameters needed)."""
        # Runs for every search hit: invariants (which need parameters) are not
        # evaluated. What holds is remembered for the checks on the same record.
        premises = self.premises_of(workflow_id, declared)
        results = evaluate_premises(premises, self._activation, {}, preconditions_only=True)
        held = frozenset(r.name for r in results if r.holds is True)
        if len(self._held) < _MAX_HELD or workflow_id in self._held:
            self._held[workflow_id] = (self.observed.version, held)
        found = [r for r in results if r.holds is False]
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
        """The first veto of the premise and the extra checks; None to automate."""
        premises = self.premises_of(workflow_id, declared, params, hit)
        failed = self._failing(premises, _as_run(declared, params))
        veto: Veto | None = None
        if premises.unverified and not (
            self.allow_unverified is not None
            and await self.allow_unverified(workflow_id, premises.action_type)
        ):
            veto = Veto(
                HumanReviewReason.PRECONDITION_NOT_MET,
                _SHARED_REASONS.share(unverified(premises)),
                f"premise:none:{premises.action_type}",
            )
        elif failed:
            veto = Veto(
                HumanReviewReason.PRECONDITION_NOT_MET,
                _SHARED_REASONS.share(
                    f"{workflow_id}: " + "; ".join(r.describe() for r in failed[:5])
                ),
                f"{failed[0].kind}:{failed[0].name}",
            )
        if veto is None:
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


def _as_run(declared: Declarations, params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters the workflow runs with: those given, and each omitted one's schema
    default (an omitted service account is the default one, and must fit too)."""
    specs = getattr(declared, "parameters", None) or ()
    defaults = {s.name: s.default for s in specs if s.default is not None and s.name not in params}
    return {**defaults, **params}
