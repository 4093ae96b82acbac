"""Short, bounded renderings of caller-supplied values and names.

Values are echoed in messages as at most a short escaped prefix, so a value
can neither forge message lines nor make a message long; names and ids go
into log lines cut by `sensitive.clip` and escaped when not printable.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

from hapi_grpc.domain.parameters.limits import LOG_NAME_CHARS
from hapi_grpc.domain.sensitive import clip

ECHO_CHARS = 40  # prefix of an offending value shown in a message
_PREVIEW_ITEMS = 8  # leading items of an array or object rendered in a message


def json_type(value: Any) -> str:
    """The JSON type name of `value` ("object" for a mapping)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def show_string(text: str) -> str:
    # repr() escapes control characters, so a value cannot forge message lines.
    if len(text) > ECHO_CHARS:
        return repr(text[:ECHO_CHARS]) + "…"
    return repr(text)


def show_number(value: int | float) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if value.bit_length() > 64:  # str() of a huge int is slow and may raise
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    return str(value)


def show_value(value: Any) -> str:
    """A short, bounded rendering of a JSON value (for messages)."""
    if isinstance(value, str):
        return show_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return show_number(value)
    if isinstance(value, list | tuple | Mapping):
        # Only a few leading items are rendered: the text is cut short anyway.
        if isinstance(value, Mapping):
            preview: Any = dict(itertools.islice(value.items(), _PREVIEW_ITEMS))
        else:
            preview = list(value[:_PREVIEW_ITEMS])
        try:
            text = json.dumps(preview, ensure_ascii=False, default=str)
            if len(value) > _PREVIEW_ITEMS:
                text = text[:-1] + ", …" + text[-1]
        except (TypeError, ValueError, RecursionError):
            text = f"an {json_type(value)} of {len(value)} items"
        return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "…"
    return f"a {type(value).__name__}"


def show_enum_value(value: Any) -> str:
    # Allowed strings are listed bare ("[Always, OnFailure, Never]").
    return value if isinstance(value, str) else show_value(value)


def log_text(text: str, limit: int = LOG_NAME_CHARS) -> str:
    """`text` for a log line: cut to `limit` (saying how much was cut), escaped if needed."""
    shown = clip(text, limit)
    return shown if shown.isprintable() else repr(shown)
