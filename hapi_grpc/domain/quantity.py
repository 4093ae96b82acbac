"""Kubernetes resource quantities ('1.5Gi', '2G', '1048576Ki', '500m') as numbers.

The parsing is the Kubernetes Python client's own `parse_quantity`, so every
notation the API server accepts is read the way the API server reads it. Its
module is loaded by itself: importing the client package would import every
generated API model (about 0.7 s) for one small function.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["QuantityError", "parse_quantity"]


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity."""


@cache
def _parser() -> Callable[[Any], Decimal]:
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the kubernetes client package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "utils" / "quantity.py"
    module_spec = importlib.util.spec_from_file_location("_hapi_k8s_quantity", path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    parse: Callable[[Any], Decimal] = module.parse_quantity
    return parse


def parse_quantity(text: str | int | float) -> Decimal:
    """The quantity's value in base units (bytes, cores); raises QuantityError."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, str):
        text = text.strip()
        if any(c.isspace() for c in text):  # the API server accepts no inner space
            raise QuantityError(f"{text[:64]!r} is not a Kubernetes quantity")
    try:
        return _parser()(text)
    except (ValueError, ArithmeticError, TypeError) as exc:
        raise QuantityError(f"{str(text)[:64]!r} is not a Kubernetes quantity") from exc
