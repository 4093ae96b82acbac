"""Our tools' arguments as their typed `tools.proto` messages, for `ToolCallRecord`.

Design notes: docs/internals.md (`transport/tool_arguments.py`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from hapi.v1 import tools_pb2
from hapi_grpc.domain.toolsets.jsontext import canonical_json

__all__ = ["json_safe", "typed_arguments", "typed_tool"]


def _typed_fields() -> dict[str, type[Message]]:
    """Tool name -> its arguments message: the `arguments` oneof of `ToolCallRecord` has
    one field per tool, named as the tool, whose message is `<Tool>Args`. Found by
    name, so a toolset adds its message and oneof entry to tools.proto and nothing
    here (its argument model is generated from the same message)."""
    oneof = tools_pb2.ToolCallRecord.DESCRIPTOR.oneofs_by_name["arguments"]
    return {
        field.name: getattr(tools_pb2, field.message_type.name)
        for field in oneof.fields
        if field.message_type is not None and field.message_type.name.endswith("Args")
    }


_TOOL_ARGS = _typed_fields()


def typed_tool(name: str) -> str | None:
    """The `ToolCallRecord` field holding the typed arguments of tool `name`, if it has one."""
    return name if name in _TOOL_ARGS else None


# Typed arguments of recent tool calls, by tool and canonical argument JSON:
# json_format is slow, and a storm's investigations make the same calls.
# The messages are only copied from, never changed. Only short argument texts
# are remembered (a call may carry up to 64 kB), so this holds at most ~1 MB.
_TYPED_ARGUMENTS: dict[tuple[str, str], Message | None] = {}
_TYPED_ARGUMENTS_KEPT = 256
_REMEMBERED_ARGUMENT_CHARS = 2048


def typed_arguments(name: str, arguments: dict[str, Any]) -> Message | None:
    """The arguments of a call to our tool `name` as its message; None if they do not fit."""
    cls = _TOOL_ARGS[name]
    key = (name, canonical_json(arguments))
    if key in _TYPED_ARGUMENTS:
        return _TYPED_ARGUMENTS[key]
    args: Message | None
    try:
        args = json_format.ParseDict(json_safe(arguments), cls(), ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError):
        args = None
    if len(key[1]) <= _REMEMBERED_ARGUMENT_CHARS:
        if len(_TYPED_ARGUMENTS) >= _TYPED_ARGUMENTS_KEPT:
            del _TYPED_ARGUMENTS[next(iter(_TYPED_ARGUMENTS))]  # the oldest
        _TYPED_ARGUMENTS[key] = args
    return args


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
