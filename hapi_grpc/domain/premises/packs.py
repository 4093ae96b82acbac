"""Premise packs: what must hold before a workflow of one action type is automated.

Design notes: docs/internals.md (`domain/premises/packs.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hapi_grpc.domain.catalog import NONE_IS_EMPTY
from hapi_grpc.domain.cel_cost import OUTSIDE, CelLimits
from hapi_grpc.domain.cel_programs import check_expression
from hapi_grpc.domain.preconditions import Declared

__all__ = ["ACTION_TYPE", "Pack", "PackCondition", "PackError", "merged", "parse_packs", "where"]

ACTION_TYPE = r"^[A-Z][A-Za-z0-9]{0,254}$"
MAX_PACKS = 500
MAX_CONDITIONS = 40


class PackError(ValueError):
    """A pack (or premises file) cannot be used; the message names the pack."""


class PackCondition(BaseModel):
    """One condition of a pack; `outside` (set by the parser, never read from a file):
    it comes from the operator's file and is bounded like a catalog's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    expression: str = Field(min_length=1, max_length=8000)
    message: str = Field(default="", max_length=300)
    show: str = Field(default="", max_length=4000)
    outside: bool = Field(default=False, exclude=True)

    @property
    def limits(self) -> CelLimits | None:
        return OUTSIDE if self.outside else None

    def compiled(self) -> PackCondition:
        """Type-checked under its bounds; ValueError naming the CEL error. The program
        is compiled again, and kept, when a workflow of its type is first judged: the
        packs of types the catalog never offers hold no memory (~60 kB a program)."""
        check_expression(self.expression, self.limits)
        if self.show:
            check_expression(self.show, self.limits)
        return self

    def declared(self, prefix: str) -> Declared:
        name = f"{prefix}.{self.name}" if prefix else self.name
        return Declared(name, self.expression, self.message, self.show, self.limits)


_Conditions = Annotated[tuple[PackCondition, ...], Field(max_length=MAX_CONDITIONS), NONE_IS_EMPTY]


class Pack(BaseModel):
    """The premise of one action type (docs/internals.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_type: str = Field(pattern=ACTION_TYPE)
    description: str = Field(default="", max_length=500)
    target: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$")
    extends: str | None = Field(default=None, pattern=ACTION_TYPE)
    roles: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    preconditions: _Conditions = ()
    invariants: _Conditions = ()

    @field_validator("roles", mode="before")
    @classmethod
    def _names_as_lists(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("preconditions")
    @classmethod
    def _no_parameters(cls, value: tuple[PackCondition, ...]) -> tuple[PackCondition, ...]:
        # Preconditions hold before any parameter is chosen (they are shown with the
        # search results), so they read neither the roles nor the workflow.
        for condition in value:
            for word in ("params", "workflow"):
                if word in condition.expression or word in condition.show:
                    raise ValueError(
                        f"precondition {condition.name!r} reads {word}: make it an invariant"
                    )
        return value

    def condition_names(self) -> list[str]:
        return [c.name for c in (*self.preconditions, *self.invariants)]


def where(error: ValidationError) -> str:
    """The first problem of `error` in one line: `field.path: message`."""
    first = error.errors()[0]
    place = ".".join(str(p) for p in first.get("loc", ()))
    message = " ".join(str(first.get("msg", "invalid")).split())
    return f"{place}: {message}" if place else message


def parse_packs(document: Any, source: str, *, outside: bool = False) -> dict[str, Pack]:
    """The packs of one document (`packs: [...]`), by action type; PackError names the
    pack. `outside`: the operator's, bounded like a catalog's CEL."""
    if document is None:
        return {}
    if not isinstance(document, dict) or not isinstance(document.get("packs", []), list):
        raise PackError(f"{source}: expected a mapping with a 'packs' list")
    entries = document.get("packs") or []
    if len(entries) > MAX_PACKS:
        raise PackError(f"{source}: more than {MAX_PACKS} packs")
    packs: dict[str, Pack] = {}
    for index, entry in enumerate(entries):
        name = entry.get("action_type") if isinstance(entry, dict) else None
        name = name[:80] if isinstance(name, str) else "?"  # a refusal quotes it
        try:
            pack = Pack.model_validate(_sourced(entry, outside))
            for kind in ("preconditions", "invariants"):
                for position, condition in enumerate(getattr(pack, kind)):
                    try:
                        condition.compiled()
                    except ValueError as exc:
                        message = " ".join(str(exc).split())
                        raise PackError(
                            f"{source}: pack {name!r} (packs[{index}]): {kind}.{position}"
                            f".expression: {message}"
                        ) from None
        except ValidationError as exc:
            raise PackError(f"{source}: pack {name!r} (packs[{index}]): {where(exc)}") from None
        if pack.action_type in packs:
            raise PackError(f"{source}: pack {pack.action_type!r} is defined twice")
        names = pack.condition_names()
        if len(names) != len(set(names)):
            raise PackError(f"{source}: pack {pack.action_type!r} repeats a condition name")
        packs[pack.action_type] = pack
    return packs


def _sourced(entry: Any, outside: bool) -> Any:
    """`entry` with each condition's `outside` set by where it was read, whatever the
    file says."""
    if not isinstance(entry, dict):
        return entry
    entry = dict(entry)
    for kind in ("preconditions", "invariants"):
        items = entry.get(kind)
        if isinstance(items, list):
            entry[kind] = [{**c, "outside": outside} if isinstance(c, dict) else c for c in items]
    return entry


def merged(packs: Mapping[str, Pack], action_type: str) -> Pack | None:
    """The pack of `action_type` with the conditions of the packs it extends first."""
    pack = packs.get(action_type)
    if pack is None:
        return None
    seen = [action_type]
    chain = [pack]
    while chain[-1].extends is not None:
        parent = packs.get(chain[-1].extends)
        if parent is None or parent.action_type in seen:
            raise PackError(
                f"pack {action_type!r} extends {chain[-1].extends!r}, which is "
                + ("unknown" if parent is None else "a cycle")
            )
        seen.append(parent.action_type)
        chain.append(parent)
    if len(chain) == 1:
        return pack
    ordered = list(reversed(chain))
    roles: dict[str, tuple[str, ...]] = {}
    for p in ordered:
        for role, names in p.roles.items():
            roles[role] = (*roles.get(role, ()), *names)
    return pack.model_copy(
        update={
            "target": next((p.target for p in reversed(ordered) if p.target), None),
            "roles": roles,
            "preconditions": tuple(c for p in ordered for c in p.preconditions),
            "invariants": tuple(c for p in ordered for c in p.invariants),
            "extends": None,
        }
    )
