"""Finding the final answer's JSON object in a model's free text.

Design notes: docs/internals.md (`domain/answer_json.py`).
"""

from __future__ import annotations

from itertools import islice
from typing import Any

import re2

from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.sensitive import utf8_safe

__all__ = ["MAX_ANSWER_CHARS", "extract_json_object"]

MAX_ANSWER_CHARS = 200_000
_MAX_CANDIDATES = 64
_MAX_RESCANS = 8

# Keys of the ADR-038 answer (and its legacy names): an object with one wins.
_CONTRACT_KEYS = frozenset(
    {
        "analysis_summary",
        "root_cause_assessment",
        "rca_severity",
        "selected_workflow",
        "selected_playbook",
        "strategies",
    }
)
_FENCE_RE = re2.compile(r"(?s)```(?:json|JSON)?[ \t]*\n(.*?)```")  # model text: linear time
_MAX_FENCES = 16  # a reply of empty fences would otherwise cost a match per 7 characters


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The answer's JSON object: bare, fenced, or the outermost balanced one in prose.

    When several objects parse, one carrying the contract's keys wins.
    """
    text = text[:MAX_ANSWER_CHARS]
    stripped = text.strip()
    found = _loads_object(stripped)
    if found is not None:
        return found
    candidates: list[dict[str, Any]] = []
    for match in islice(_FENCE_RE.finditer(utf8_safe(text)), _MAX_FENCES):
        obj = _loads_object(match.group(1).strip())
        if obj is not None:
            candidates.append(obj)
    candidates.extend(_balanced_objects(text))
    for obj in candidates:
        if _CONTRACT_KEYS & obj.keys():
            return obj
    return candidates[0] if candidates else None


def _loads_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value = bounded_json.loads(text, max_bytes=MAX_ANSWER_CHARS)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _balanced_objects(text: str) -> list[dict[str, Any]]:
    """Outermost `{...}` spans that parse, left to right.

    One pass pairs the braces (string state taken from the first '{'); a
    span that does not parse is replaced by the spans nested in it. If that
    finds nothing, a few rescans from later '{' recover from a stray quote in
    the prose. Both steps are bounded, whatever the input.
    """
    first = text.find("{")
    if first == -1:
        return []
    found = _parse_spans(text, _brace_spans(text, first))
    if found:
        return found
    start = text.find("{", first + 1)
    for _ in range(_MAX_RESCANS):
        if start == -1:
            break
        end = _matching_brace(text, start)
        if end is not None:
            obj = _loads_object(text[start : end + 1])
            if obj is not None:
                return [obj]
        start = text.find("{", start + 1)
    return []


def _brace_spans(text: str, start: int) -> list[tuple[int, int]]:
    """(open, close) index pairs of the balanced braces from `start`, by open index."""
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            spans.append((stack.pop(), i))
    spans.sort()
    return spans


def _parse_spans(text: str, spans: list[tuple[int, int]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    covered_until = -1
    tries = 0
    for open_at, close_at in spans:
        if open_at <= covered_until:
            continue  # inside an object already found
        if tries >= _MAX_CANDIDATES:
            break
        tries += 1
        obj = _loads_object(text[open_at : close_at + 1])
        if obj is not None:
            found.append(obj)
            covered_until = close_at
    return found


def _matching_brace(text: str, start: int) -> int | None:
    """Index of the '}' closing the '{' at `start`, skipping JSON strings."""
    for open_at, close_at in _brace_spans(text, start):
        if open_at == start:
            return close_at
    return None
