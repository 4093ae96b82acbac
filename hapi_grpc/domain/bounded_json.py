"""JSON from outside, bounded in size and depth.

Design notes: docs/internals.md (`domain/bounded_json.py`).
"""

from __future__ import annotations

import json
from typing import Any

import re2

__all__ = [
    "MAX_DEPTH",
    "PRUNED",
    "JsonBoundsError",
    "check_depth",
    "holds_pruned",
    "loads",
    "loads_pruned",
]

MAX_DEPTH = 64  # levels of arrays and objects: far past any contract's
# Everything up to the next bracket outside a string, and that bracket.
_NEXT_BRACKET = re2.compile(r'(?:"(?s:[^"\\]|\\.)*"|[^"\[\]{}])*([\[\]{}])')


class _Pruned:
    """Stands for an array or object nested past the bound, left unparsed."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<nested too deep>"


PRUNED = _Pruned()


class JsonBoundsError(json.JSONDecodeError):
    """JSON larger or deeper than its bound."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, "", 0)

    def __str__(self) -> str:
        return self.msg


def loads(text: str | bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)` when `text` is within `max_bytes` (characters for a str)
    and nests at most `max_depth` levels; JsonBoundsError otherwise."""
    if len(text) > max_bytes:
        raise JsonBoundsError(f"JSON larger than {max_bytes} bytes")
    value = _parsed(text, max_depth)
    if value is _TOO_DEEP:
        raise JsonBoundsError(f"JSON nested deeper than {max_depth} levels")
    return value


_TOO_DEEP = object()


def _parsed(text: str | bytes, max_depth: int) -> Any:
    """The value of `text`, or `_TOO_DEEP`. Parsing first is ~30 times cheaper than
    scanning the text for brackets outside strings (measured on model replies);
    the C parser's recursion guard keeps a runaway nesting from going further."""
    try:
        value = json.loads(text)
    except RecursionError:
        return _TOO_DEEP
    if _brackets(text) > max_depth:
        try:
            check_depth(value, max_depth)
        except ValueError:
            return _TOO_DEEP
    return value


def _brackets(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{")
    return text.count("[") + text.count("{")


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """ValueError when lists and dicts in `value` nest deeper than `max_depth`."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def loads_pruned(text: str | bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)` within `max_bytes`, each array or object deeper than
    `max_depth` replaced by `PRUNED` (so is a bare NaN or Infinity, which JSON has
    not). Linear (about a second for a megabyte of brackets: run it off the event
    loop for large texts): the deep parts are cut out before the text is parsed."""
    if len(text) > max_bytes:
        raise JsonBoundsError(f"JSON larger than {max_bytes} bytes")
    scanned = text.decode("utf-8") if isinstance(text, bytes) else text
    value = _parsed(scanned, max_depth)
    if value is not _TOO_DEEP:
        return value
    parts: list[str] = []
    depth = kept = 0
    cut = -1
    for token in _NEXT_BRACKET.finditer(scanned):
        if token.group(1) in "[{":
            depth += 1
            if depth == max_depth + 1:
                cut = token.start(1)
        else:
            if depth == max_depth + 1 and cut >= 0:
                parts += [scanned[kept:cut], "NaN"]
                kept, cut = token.end(), -1
            depth -= 1
    parts.append(scanned[kept:])
    return json.loads("".join(parts), parse_constant=lambda _: PRUNED)


def holds_pruned(value: Any) -> bool:
    """Whether `PRUNED` is anywhere in `value` (from `loads_pruned`)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is PRUNED:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
