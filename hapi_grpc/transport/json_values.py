"""Python values as a `google.protobuf.Struct` can hold them (JSON values only)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["json_safe"]


def json_safe(value: Any) -> Any:
    """Struct cannot hold NaN/inf or non-JSON types; make every value JSON."""
    # Scalars first: they are nearly every value, and the Mapping check is slow.
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return str(value)
