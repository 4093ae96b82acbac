"""`PremiseBook`: the packs in force, and what premise a given workflow must meet.

The book holds the shipped packs (`bundled.bundled_book`), overlaid by the operator's
premises file (`OperatorPremises`): per action type a pack added, extended or
replaced, per workflow a type to judge it as, role mappings and conditions of its
own. `premises()` resolves one workflow to its `Premises`: its type's pack with roles
bound to its parameters, and its own declarations (the catalog's, then the
operator's for it), which add to the pack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hapi_grpc.domain.catalog import Condition, Declarations, Workflow
from hapi_grpc.domain.preconditions import Declared, observed_fields
from hapi_grpc.domain.premises.packs import (
    ACTION_TYPE,
    MAX_CONDITIONS,
    MAX_PACKS,
    Pack,
    PackCondition,
    PackError,
    merged,
    parse_packs,
    where,
)
from hapi_grpc.domain.premises.roles import RoleBinding, RoleTable, bind_roles

__all__ = ["OperatorPremises", "PremiseBook", "Premises", "describe_workflow", "parse_operator"]

_RESOLVED = 4096  # resolutions kept (a catalog's workflows, each with its parameter names)


class WorkflowPremises(BaseModel):
    """The operator's premise for one workflow (see docs/premises.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workflow_id: str = Field(min_length=1, max_length=128)
    action_type: str | None = Field(default=None, pattern=ACTION_TYPE)  # judge it as this type
    replace: bool = False  # True: no type pack, only the conditions below
    roles: dict[str, str | None] = Field(default_factory=dict)  # role -> parameter
    preconditions: tuple[Condition, ...] = Field(default=(), max_length=MAX_CONDITIONS)
    invariants: tuple[Condition, ...] = Field(default=(), max_length=MAX_CONDITIONS)


@dataclass(frozen=True, slots=True)
class OperatorPremises:
    """The operator's premises file, parsed: packs by type (`replace` per pack) and
    premises by workflow."""

    packs: Mapping[str, Pack] = field(default_factory=dict)
    replaces: frozenset[str] = frozenset()  # types whose shipped pack is replaced
    workflows: Mapping[str, WorkflowPremises] = field(default_factory=dict)


def parse_operator(document: Any, source: str, table: RoleTable) -> OperatorPremises:
    """The operator's premises file; PackError (one line naming the entry) when unusable."""
    if document is None:
        return OperatorPremises()
    if not isinstance(document, dict) or set(document) - {"packs", "workflows"}:
        raise PackError(f"{source}: expected a mapping with 'packs' and/or 'workflows'")
    entries = document.get("packs") or []
    replaces = set()
    plain = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and "replace" in entry:
            entry = dict(entry)
            if entry.pop("replace") is True:
                replaces.add(str(entry.get("action_type")))
        plain.append(entry)
    packs = parse_packs({"packs": plain}, source, outside=True)
    workflows: dict[str, WorkflowPremises] = {}
    items = document.get("workflows") or []
    if not isinstance(items, list) or len(items) > MAX_PACKS:
        raise PackError(f"{source}: 'workflows' must be a list of at most {MAX_PACKS}")
    for index, item in enumerate(items):
        name = item.get("workflow_id") if isinstance(item, dict) else None
        name = name[:80] if isinstance(name, str) else "?"  # a refusal quotes it
        try:
            entry = WorkflowPremises.model_validate(item)
        except ValidationError as exc:
            raise PackError(
                f"{source}: workflow {name!r} (workflows[{index}]): {where(exc)}"
            ) from None
        if entry.workflow_id in workflows:
            raise PackError(f"{source}: workflow {entry.workflow_id!r} is listed twice")
        workflows[entry.workflow_id] = entry
    operator = OperatorPremises(packs, frozenset(replaces), workflows)
    _check_roles(operator, table, source)
    return operator


def _check_roles(operator: OperatorPremises, table: RoleTable, source: str) -> None:
    # The line names the field too (`target` or `roles`), as a schema error does.
    for pack in operator.packs.values():
        fields = [("roles", role) for role in pack.roles]
        if pack.target:
            fields.append(("target", pack.target))
        for key, role in fields:
            if role not in table.roles:
                raise PackError(
                    f"{source}: pack {pack.action_type!r}: {key}: unknown role {role!r}"
                )
    for wf in operator.workflows.values():
        for role in wf.roles:
            if role not in table.roles:  # the table's names all match ROLE_NAME
                raise PackError(
                    f"{source}: workflow {wf.workflow_id!r}: roles: unknown role {role!r}"
                )


@dataclass(frozen=True, slots=True)
class Premises:
    """What one workflow must meet before it is automated.

    `pack_*` conditions read the roles (`binding.view(params)`); `own_*` conditions
    (the catalog's declarations, then the operator's for this workflow) read the
    parameters by name. `unverified`: the workflow changes the cluster and nothing
    at all states its premise.
    """

    workflow_id: str
    action_type: str  # as the catalog declares it ("" for none)
    pack: str | None  # the type whose pack applies, None when none does
    binding: RoleBinding
    workflow: Mapping[str, Any]  # the pack's `workflow` variable
    pack_preconditions: tuple[Declared, ...] = ()
    pack_invariants: tuple[Declared, ...] = ()
    own_preconditions: tuple[Declared, ...] = ()
    own_invariants: tuple[Declared, ...] = ()
    read_only: bool = False
    # The fields of `observed` its conditions read (None: all), and those its
    # preconditions read.
    fields: frozenset[str] | None = None
    precondition_fields: frozenset[str] | None = None

    @property
    def unverified(self) -> bool:
        declared = (
            self.pack_preconditions
            or self.pack_invariants
            or self.own_preconditions
            or self.own_invariants
        )
        return not self.read_only and not declared


def _declared(prefix: str, conditions: Iterable[Condition | PackCondition]) -> tuple[Declared, ...]:
    """Conditions as evaluated, each with the bounds it was compiled under."""
    return tuple(c.declared(prefix) for c in conditions)


class PremiseBook:
    """The packs in force and the operator's overlay (see module docstring)."""

    def __init__(
        self,
        packs: Mapping[str, Pack],
        roles: RoleTable,
        operator: OperatorPremises | None = None,
    ) -> None:
        operator = operator or OperatorPremises()
        combined: dict[str, Pack] = {}
        for name in {*packs, *operator.packs}:
            shipped, own = packs.get(name), operator.packs.get(name)
            if own is None or shipped is None or name in operator.replaces:
                combined[name] = own or shipped  # type: ignore[assignment]
                continue
            combined[name] = shipped.model_copy(  # the operator's conditions add to it
                update={
                    "roles": {**shipped.roles, **own.roles},
                    "target": own.target or shipped.target,
                    "preconditions": (*shipped.preconditions, *own.preconditions),
                    "invariants": (*shipped.invariants, *own.invariants),
                }
            )
        self.roles = roles
        self.operator = operator
        self._packs: dict[str, Pack] = {}
        for name in combined:
            pack = merged(combined, name)
            assert pack is not None
            names = pack.condition_names()
            if len(names) != len(set(names)):
                raise PackError(f"pack {name!r} repeats a condition name once extended")
            for role in (*pack.roles, *([pack.target] if pack.target else [])):
                if role not in roles.roles:
                    raise PackError(f"pack {name!r}: unknown role {role!r}")
            self._packs[name] = pack
        self._operator_types = {n: p.roles for n, p in operator.packs.items()}
        # Every pack's conditions as evaluated, built once.
        self._declared = {
            name: (_declared(name, p.preconditions), _declared(name, p.invariants))
            for name, p in self._packs.items()
        }
        # One workflow resolves the same way for the same inputs: the search, the
        # validation and the final check of every investigation ask again.
        self._resolved: dict[tuple[Any, ...], Premises] = {}

    @property
    def action_types(self) -> tuple[str, ...]:
        """Every action type that has a pack."""
        return tuple(sorted(self._packs))

    def pack(self, action_type: str) -> Pack | None:
        """The pack of `action_type` (extensions merged), None when it has none."""
        return self._packs.get(action_type)

    def premises(
        self,
        workflow_id: str,
        declared: Declarations,
        params: Iterable[str] = (),
        detected_labels: Mapping[str, Any] | None = None,
    ) -> Premises:
        """The premise of one workflow, bound to its parameters: those of its schema
        (when `declared` has one, with the roles it states) and the `params` proposed."""
        specs = getattr(declared, "parameters", None) or ()
        gitops = (detected_labels or {}).get("gitOpsManaged") is True
        names = tuple(dict.fromkeys([*(s.name for s in specs), *params]))
        roles = tuple(sorted({s.name: s.role for s in specs if s.role}.items()))
        key = (
            workflow_id,
            declared.action_type,
            declared.read_only,
            declared.preconditions,
            declared.invariants,
            names,
            roles,
            gitops,
        )
        found = self._resolved.get(key)
        if found is None:
            found = self._resolve(workflow_id, declared, names, dict(roles), gitops)
            if len(self._resolved) >= _RESOLVED:
                self._resolved.clear()  # bounded: a catalog's workflows, not any input
            self._resolved[key] = found
        return found

    def _resolve(
        self,
        workflow_id: str,
        declared: Declarations,
        parameters: tuple[str, ...],
        declared_roles: Mapping[str, str],
        gitops: bool,
    ) -> Premises:
        operator = self.operator.workflows.get(workflow_id)
        action_type = declared.action_type
        judged = operator.action_type if operator and operator.action_type else action_type
        # A pack states what a change needs: a workflow declared read-only changes
        # nothing, so only its own declarations apply to it.
        replaced = operator is not None and operator.replace
        pack = None if replaced or declared.read_only else self._packs.get(judged)
        binding = bind_roles(
            self.roles,
            parameters,
            declared=declared_roles,
            target=pack.target if pack else None,
            pack_names=pack.roles if pack else None,
            type_names=self._operator_types.get(judged),
            workflow_mapping=operator.roles if operator else None,
        )
        own_pre = _declared("", declared.preconditions)
        own_inv = _declared("", declared.invariants)
        if operator:
            own_pre += _declared("operator", operator.preconditions)
            own_inv += _declared("operator", operator.invariants)
        pack_pre, pack_inv = self._declared[judged] if pack else ((), ())
        every = (*pack_pre, *pack_inv, *own_pre, *own_inv)
        before = (*pack_pre, *own_pre)
        return Premises(
            workflow_id=workflow_id,
            action_type=action_type,
            pack=pack.action_type if pack else None,
            binding=binding,
            workflow={"id": workflow_id, "action_type": judged, "gitops": gitops},
            pack_preconditions=pack_pre,
            pack_invariants=pack_inv,
            own_preconditions=own_pre,
            own_invariants=own_inv,
            read_only=declared.read_only,
            fields=observed_fields(tuple(t for d in every for t in (d.expression, d.show))),
            precondition_fields=observed_fields(
                tuple(t for d in before for t in (d.expression, d.show))
            ),
        )


def describe_workflow(book: PremiseBook, workflow: Workflow) -> str:
    """`<id>: <type> -> pack <type> (roles ...) + N own conditions`, or why it is unverified."""
    premises = book.premises(workflow.workflow_id, workflow, (), workflow.labels.detected_labels)
    kind = repr(premises.action_type) if premises.action_type else "no action type"
    own = len(premises.own_preconditions) + len(premises.own_invariants)
    if premises.read_only:
        judged = "read-only"
    elif premises.unverified:
        known = "unknown action type" if premises.action_type else "no action type"
        judged = f"UNVERIFIED ({known}: no premise pack, nothing declared): review"
    elif premises.pack is None:
        judged = f"no pack; {own} own condition(s)"
    else:
        count = len(premises.pack_preconditions) + len(premises.pack_invariants)
        judged = f"pack {premises.pack} ({count} conditions; roles {premises.binding.describe()})"
        if own:
            judged += f" + {own} own condition(s)"
    return f"{workflow.workflow_id}: {kind}: {judged}"
