"""Parameter roles: which of a workflow's parameters is the namespace, the workload,
the new limit... so one premise pack applies to every workflow of its action type.

A role is bound, by precedence: by the operator's mapping for that workflow, by the
workflow's own parameter (`role:` on its schema entry), by the operator's mapping
for the action type, then by the names of the role table (`data/premises/roles.yaml`)
and the pack's own names, then, for the role a pack declares as its `target`, by the
generic target names (TARGET_RESOURCE_NAME, ...). A mapping to nothing (`null`)
leaves the role unbound. A role two parameters could bind at the same step is
ambiguous and stays unbound. An unbound role is absent from the pack's `params`,
so a condition that reads it is unknown, and unknown does not hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ROLE_NAME", "Role", "RoleBinding", "RoleTable", "bind_roles", "canonical_kind"]

ROLE_NAME = r"^[a-z][a-z0-9_]{0,63}$"
# Kinds as workflows may spell them in a TARGET_RESOURCE_KIND parameter.
_KINDS = {
    k.lower(): k
    for k in (
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Pod",
        "Node",
        "HorizontalPodAutoscaler",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "Certificate",
        "NetworkPolicy",
        "Job",
        "CronJob",
    )
}
_KINDS.update(
    {"hpa": "HorizontalPodAutoscaler", "pvc": "PersistentVolumeClaim", "pdb": "PodDisruptionBudget"}
)


def canonical_kind(value: Any) -> Any:
    """A kind spelled in any case as the API spells it (`deployment` -> `Deployment`)."""
    return _KINDS.get(value.lower(), value) if isinstance(value, str) else value


class Role(BaseModel):
    """One role of the table: what it means and the parameter names that bind it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str = Field(default="", max_length=300)
    names: tuple[str, ...] = ()
    kinds: dict[str, str] = Field(default_factory=dict)  # name -> the kind it says


class RoleTable(BaseModel):
    """The role table (`data/premises/roles.yaml`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target_names: tuple[str, ...] = ()
    roles: dict[Annotated[str, Field(pattern=ROLE_NAME)], Role]

    def names_of(self, role: str) -> tuple[str, ...]:
        found = self.roles.get(role)
        return (*found.names, *found.kinds) if found else ()

    def kind_said_by(self, parameter: str) -> str | None:
        upper = parameter.upper()
        for role in self.roles.values():
            if upper in role.kinds:
                return role.kinds[upper]
        return None


@dataclass(frozen=True, slots=True)
class RoleBinding:
    """Which parameter binds each role; `view` turns parameters into the pack's `params`."""

    roles: Mapping[str, str] = field(default_factory=dict)  # role -> parameter name
    implied: Mapping[str, str] = field(default_factory=dict)  # role -> value a name says
    ambiguous: tuple[str, ...] = ()

    def view(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The pack's `params`: role -> the bound parameter's value, when given."""
        out: dict[str, Any] = dict(self.implied)
        for role, name in self.roles.items():
            if name in params and params[name] is not None:
                out[role] = params[name]
        if "kind" in out:
            out["kind"] = canonical_kind(out["kind"])
        return out

    def describe(self) -> str:
        """`role=PARAMETER, ...` for messages (`premises check`, warnings)."""
        parts = [f"{r}={p}" for r, p in sorted(self.roles.items())]
        parts += [f"{r}={v!r} (implied)" for r, v in sorted(self.implied.items())]
        parts += [f"{r}=ambiguous" for r in self.ambiguous]
        return ", ".join(parts) or "no parameter bound"


def _listed(names: Mapping[str, str], wanted: Iterable[str]) -> list[str]:
    """The workflow's parameters (as it spells them) whose names are in `wanted`."""
    return [names[n] for n in dict.fromkeys(w.upper() for w in wanted) if n in names]


def bind_roles(
    table: RoleTable,
    parameters: Iterable[str],
    *,
    declared: Mapping[str, str] | None = None,
    target: str | None = None,
    pack_names: Mapping[str, tuple[str, ...]] | None = None,
    type_names: Mapping[str, tuple[str, ...]] | None = None,
    workflow_mapping: Mapping[str, str | None] | None = None,
) -> RoleBinding:
    """Bind roles to `parameters` (see module docstring).

    `declared`: parameter -> role the workflow's schema states; `target`: the role the
    generic target names bind; `pack_names`: the pack's own names per role;
    `type_names`: the operator's names per role for the action type;
    `workflow_mapping`: the operator's role -> parameter for the workflow (None unbinds).
    """
    names = {p.upper(): p for p in parameters}
    bound: dict[str, str] = {}
    decided: set[str] = set()
    ambiguous: list[str] = []

    def settle(role: str, found: list[str]) -> None:
        if role in decided:
            return
        decided.add(role)
        if len(found) == 1:
            bound[role] = found[0]
        elif found:
            ambiguous.append(role)

    for role, parameter in (workflow_mapping or {}).items():
        settle(role, _listed(names, [parameter] if parameter else []))
    own: dict[str, list[str]] = {}
    for parameter, role in (declared or {}).items():
        own.setdefault(role, []).append(parameter)
    for role, found in own.items():
        settle(role, found)
    for role, wanted in (type_names or {}).items():
        if found := _listed(names, wanted):
            settle(role, found)
    extra = pack_names or {}
    for role in dict.fromkeys((*table.roles, *extra)):
        if found := _listed(names, (*table.names_of(role), *extra.get(role, ()))):
            settle(role, found)
    if target:
        settle(target, _listed(names, table.target_names))
    implied: dict[str, str] = {}
    if "kind" not in decided:
        said = {table.kind_said_by(p) for p in bound.values()} - {None}
        if len(said) == 1:
            implied["kind"] = str(said.pop())
    return RoleBinding(bound, implied, tuple(ambiguous))
