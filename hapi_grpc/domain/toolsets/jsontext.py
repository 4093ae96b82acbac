"""JSON text helpers shared by tools: compact results, stable keys, notices."""

from __future__ import annotations

import json
from typing import Any

from hapi_grpc.domain import bounded_json

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "canonical_json",
    "compact_json",
    "one_line",
    "parse_arguments",
    "with_notice",
]

# Largest argument text a tool call may carry.
MAX_ARGUMENT_BYTES = 64 * 1024


def compact_json(value: Any) -> str:
    """JSON without insignificant whitespace (tool results are paid for per token)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def canonical_json(value: Any) -> str:
    """A stable text for equality checks: sorted keys, compact."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def with_notice(result: str, notice: str) -> str:
    """`result` (a JSON object text) with a `notice` for the model added."""
    try:
        payload = bounded_json.loads(result, max_bytes=len(result) + 1)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        payload = {"result": result}
    payload["notice"] = notice
    return compact_json(payload)


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace folded), cut to `limit` characters with '…'."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """The argument object of a tool call, or None and why it is not one."""
    if len(raw) > MAX_ARGUMENT_BYTES:
        return None, f"larger than {MAX_ARGUMENT_BYTES} bytes"
    if not raw.strip():
        return {}, ""  # "no arguments": the schema check reports what is missing
    try:
        value = bounded_json.loads(raw, max_bytes=MAX_ARGUMENT_BYTES)
    except ValueError as exc:
        return None, f"malformed JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"got a JSON {type(value).__name__}"
    return value, ""
