"""A small declarative language for what a workflow parameter must satisfy.

One constraint is a mapping with any of these keys, all of which must hold:

    equals: payments              the value, compared as text (1 == "1")
    one_of: [Always, OnFailure]   one of these values
    matches: "^payment-api$"      a regular expression (full match)
    quantity_gt: 512Mi            a Kubernetes quantity above this one
    quantity_gte / quantity_lt / quantity_lte
    gt / gte / lt / lte: 3        a number compared with this one
    present: true                 the parameter must be given (false: absent)
    absent: true                  the parameter must not be given
    optional: true                the others apply only when the parameter is given

Without `optional`, an absent parameter fails every constraint but
`absent`/`present: false`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

_SUFFIXES = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
}  # fmt: skip
_QUANTITY = re.compile(
    r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity ("512Mi", "1.5", "250m") as a number; ValueError otherwise."""
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        raise ValueError(f"not a Kubernetes quantity: {value!r}") from None
    return number * Decimal(str(_SUFFIXES[match.group(2) or ""]))


def _number(value: Any) -> Decimal:
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"not a number: {value!r}") from None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Constraint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    equals: Any = None
    one_of: tuple[Any, ...] | None = None
    matches: str | None = None
    quantity_gt: str | None = None
    quantity_gte: str | None = None
    quantity_lt: str | None = None
    quantity_lte: str | None = None
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None
    present: bool | None = None
    absent: bool | None = None
    optional: bool = False

    @field_validator("quantity_gt", "quantity_gte", "quantity_lt", "quantity_lte")
    @classmethod
    def _quantity(cls, value: str | None) -> str | None:
        if value is not None:
            parse_quantity(value)
        return value

    @field_validator("matches")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value

    @model_validator(mode="after")
    def _something(self) -> Constraint:
        if not self.model_fields_set:
            raise ValueError("an empty constraint checks nothing")
        return self

    def violations(self, name: str, params: dict[str, Any]) -> list[str]:
        """What `params[name]` breaks, as readable lines; empty when it satisfies all."""
        given = name in params and params[name] is not None
        wants_absent = self.absent is True or self.present is False
        if wants_absent:
            return [f"{name} must be absent, got {params[name]!r}"] if given else []
        if not given:
            return [] if self.optional else [f"{name} is missing"]
        value = params[name]
        out: list[str] = []
        if "equals" in self.model_fields_set and _text(value) != _text(self.equals):
            out.append(f"{name}={value!r} is not {self.equals!r}")
        if self.one_of is not None and _text(value) not in {_text(v) for v in self.one_of}:
            out.append(f"{name}={value!r} is not one of {list(self.one_of)!r}")
        if self.matches is not None and not re.fullmatch(self.matches, _text(value)):
            out.append(f"{name}={value!r} does not match {self.matches!r}")
        out += self._compare(name, value, parse_quantity, "quantity_")
        out += self._compare(name, value, _number, "")
        return out

    def _compare(self, name: str, value: Any, parse: Any, prefix: str) -> list[str]:
        bounds = {
            op: getattr(self, prefix + op)
            for op in ("gt", "gte", "lt", "lte")
            if getattr(self, prefix + op) is not None
        }
        if not bounds:
            return []
        try:
            have = parse(value)
        except ValueError as exc:
            return [f"{name}: {exc}"]
        checks = {
            "gt": lambda a, b: a > b,
            "gte": lambda a, b: a >= b,
            "lt": lambda a, b: a < b,
            "lte": lambda a, b: a <= b,
        }
        symbols = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
        return [
            f"{name}={value!r} is not {symbols[op]} {bound}"
            for op, bound in bounds.items()
            if not checks[op](have, parse(bound))
        ]


def parameter_violations(constraints: dict[str, Constraint], params: dict[str, Any]) -> list[str]:
    """Every violation of `constraints` by `params`, parameter by parameter."""
    out: list[str] = []
    for name, constraint in constraints.items():
        out += constraint.violations(name, params)
    return out
