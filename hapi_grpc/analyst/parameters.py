"""A workflow's parameters filled from the evidence, by role.

Design notes: docs/internals.md (`analyst/parameters.py`).
"""

from __future__ import annotations

from typing import Any

import re2

from hapi_grpc.analyst.actions import Values
from hapi_grpc.analyst.amounts import write_bytes, write_cores

__all__ = ["Filled", "fill", "respelled"]

_SUGGESTED_RE = re2.compile(r"did you mean '(?P<value>[^']{1,200})'")


class Filled:
    """The parameters filled, or the name of the first required one with no value."""

    __slots__ = ("missing", "parameters")

    def __init__(self, parameters: dict[str, Any], missing: str = "") -> None:
        self.parameters = parameters
        self.missing = missing


def _value(role: str, spec: dict[str, Any], values: Values) -> Any:
    if role == "memory_limit" and "memory_limit_bytes" in values:
        return write_bytes(int(values["memory_limit_bytes"]), spec)
    if role == "size" and "size_bytes" in values:
        return write_bytes(int(values["size_bytes"]), spec)
    if role == "cpu_limit" and "cpu_cores" in values:
        return write_cores(float(values["cpu_cores"]), spec)
    value = values.get(role)
    if value is None:
        return None
    kind = spec.get("type")
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def fill(specs: list[dict[str, Any]], values: Values) -> Filled:
    """The parameters of one workflow from the evidence's values by role."""
    filled: dict[str, Any] = {}
    for spec in specs:
        name = str(spec.get("name", ""))
        role = str(spec.get("role") or "")
        value = _value(role, spec, values) if role else None
        if value is None:
            if spec.get("required"):
                return Filled(filled, name)
            continue
        filled[name] = value
    return Filled(filled)


def respelled(proposed: dict[str, Any], errors: list[Any]) -> dict[str, Any] | None:
    """The proposal with the validator's respellings applied; None when an error
    suggests none (then a human looks at it: the values came from the evidence)."""
    fixed = dict(proposed)
    for error in errors:
        if not isinstance(error, dict):
            return None
        match = _SUGGESTED_RE.search(str(error.get("message", ""))[:2000])
        name = str(error.get("parameter", ""))
        if match is None or name not in fixed:
            return None
        fixed[name] = match.group("value")
    return fixed if fixed != proposed else None
