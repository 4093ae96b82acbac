"""Quantities the analyst reads and writes, in Kubernetes' own notations.

Every quantity the cluster shows is read with the Kubernetes client's parser
(`domain.quantity`), whatever its notation (`300G`, `805306368`, `0.75Gi`, `1e9`,
`500m`); text is never compared as text. New values are derived from what was read:

- memory after OOM kills: the Vertical Pod Autoscaler's rule for a container killed
  at its limit, the larger of +20% and +100Mi over the higher of the current limit
  and the observed peak, rounded up to a whole Mi;
- written in the notation the workflow's schema accepts (its `pattern`), tried in
  the order Gi, Mi, Ki, plain bytes, G, M.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import re2

from hapi_grpc.domain.quantity import QuantityError, parse_quantity

__all__ = ["bytes_of", "cores_of", "memory_after_oom", "write_bytes", "write_cores"]

_MI = 1024 * 1024
# recommender: OOMBumpUpRatio and OOMMinBumpUp of the Vertical Pod Autoscaler.
_OOM_BUMP_RATIO = 1.2
_OOM_MIN_BUMP = 100 * _MI
_BINARY = (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", _MI), ("Ki", 1024))
_DECIMAL = (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def _quantity(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def bytes_of(value: Any) -> int | None:
    """A memory or storage quantity in whole bytes (rounded up); None when unreadable."""
    amount = _quantity(value)
    return None if amount is None or amount < 0 else math.ceil(amount)


def cores_of(value: Any) -> float | None:
    """A CPU quantity in cores (`500m` -> 0.5); None when unreadable."""
    amount = _quantity(value)
    return None if amount is None else float(amount)


def memory_after_oom(limit: int, peak: int | None) -> int:
    """The new memory limit for a container killed at `limit` that peaked at `peak`."""
    base = max(limit, peak or 0)
    raised = max(math.ceil(base * _OOM_BUMP_RATIO), base + _OOM_MIN_BUMP)
    return -(-raised // _MI) * _MI


def _forms(amount: int) -> list[str]:
    forms: list[str] = []
    for units in (_BINARY, _DECIMAL):
        for suffix, size in units:
            if amount % size == 0:
                forms.append(f"{amount // size}{suffix}")
    forms.append(str(amount))
    order = ("Gi", "Mi", "Ki", "", "G", "M")
    return sorted(forms, key=lambda f: _rank(f, order))


def _rank(form: str, order: tuple[str, ...]) -> int:
    suffix = form.lstrip("0123456789")
    return order.index(suffix) if suffix in order else len(order)


def write_bytes(amount: int, spec: dict[str, Any]) -> str | None:
    """`amount` bytes in a notation the parameter's pattern accepts (rounded up to a Mi
    when no exact form fits); None when none does."""
    pattern = spec.get("pattern")
    for candidate in (amount, -(-amount // _MI) * _MI):
        for form in _forms(candidate):
            if not pattern or re2.search(str(pattern), form):
                return form
    return None


def write_cores(cores: float, spec: dict[str, Any]) -> float | int | str:
    """Cores as the parameter's type wants them: a number for integer/number/float
    parameters (rounded up to 0.1 core), else a millicore quantity."""
    kind = spec.get("type")
    if kind == "integer":
        return math.ceil(cores)
    if kind in ("number", "float"):
        return math.ceil(cores * 10 - 1e-9) / 10
    return f"{math.ceil(cores * 1000)}m"
