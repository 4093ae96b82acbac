"""The checked syntax tree of a compiled CEL program, read for cost estimation.

Design notes: docs/internals.md (`domain/cel_ast.py`).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from google.protobuf import empty_pb2
from google.protobuf.unknown_fields import UnknownFieldSet

__all__ = ["Node", "read_program"]

_LENGTH_DELIMITED = 2


@dataclass(frozen=True, slots=True)
class Node:
    """One expression node. `name`: the identifier, field or function; `text`: a
    string constant's value; `args`: operands (a call's target first; a loop's
    range, init, condition, step and result)."""

    kind: str
    name: str = ""
    text: str | None = None
    args: tuple[Node, ...] = ()
    vars: tuple[str, ...] = ()  # a loop's iteration and accumulator variables
    overloads: tuple[str, ...] = ()  # a call's possible overloads ("add_string", ...)


def _fields(data: bytes) -> list[tuple[int, Any]]:
    fields = UnknownFieldSet(empty_pb2.Empty.FromString(data))
    return [(fields[i].field_number, fields[i].data) for i in range(len(fields))]


def _one(fields: list[tuple[int, Any]], number: int, default: Any = None) -> Any:
    for field_number, value in fields:
        if field_number == number:
            return value
    return default


def _all(fields: list[tuple[int, Any]], number: int) -> list[Any]:
    return [value for field_number, value in fields if field_number == number]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


def read_program(program: Any) -> Node:
    """The root node of a program made by `Env.compile`."""
    any_fields = _fields(program.serialize())
    checked = _fields(_one(any_fields, 2, b""))
    overloads: dict[int, tuple[str, ...]] = {}
    for entry in _all(checked, 2):  # reference_map: expression id -> Reference
        entry_fields = _fields(entry)
        reference = _fields(_one(entry_fields, 2, b""))
        overloads[_one(entry_fields, 1, 0)] = tuple(_text(o) for o in _all(reference, 3))
    _overloads.set(overloads)
    return _node(_one(checked, 4, b""))


_overloads: ContextVar[dict[int, tuple[str, ...]]] = ContextVar("cel_overloads")


def _node(data: bytes) -> Node:
    fields = _fields(data)
    for number, read in _READERS.items():
        body = _one(fields, number)
        if body is not None:
            node = read(_fields(body) if isinstance(body, bytes) else [])
            if node.kind == "call":
                found = _overloads.get().get(_one(fields, 2, 0), ())
                node = Node("call", name=node.name, args=node.args, overloads=found)
            return node
    return Node("const")  # an empty constant (e.g. null)


def _const(fields: list[tuple[int, Any]]) -> Node:
    for number in (6, 7):  # string_value, bytes_value
        value = _one(fields, number)
        if value is not None:
            return Node("const", text=_text(value) if number == 6 else "\0" * len(value))
    return Node("const")


def _ident(fields: list[tuple[int, Any]]) -> Node:
    return Node("ident", name=_text(_one(fields, 1)))


def _select(fields: list[tuple[int, Any]]) -> Node:
    return Node("select", name=_text(_one(fields, 2)), args=(_node(_one(fields, 1, b"")),))


def _call(fields: list[tuple[int, Any]]) -> Node:
    target = _one(fields, 1)
    args = tuple(_node(a) for a in _all(fields, 3))
    if target is not None:
        args = (_node(target), *args)
    return Node("call", name=_text(_one(fields, 2)), args=args)


def _list(fields: list[tuple[int, Any]]) -> Node:
    return Node("list", args=tuple(_node(e) for e in _all(fields, 1)))


def _struct(fields: list[tuple[int, Any]]) -> Node:
    values = []
    for entry in _all(fields, 2):
        entry_fields = _fields(entry)
        key = _one(entry_fields, 3)
        values.append(_node(key) if key is not None else Node("const", text=""))
        values.append(_node(_one(entry_fields, 4, b"")))
    return Node("struct", args=tuple(values))


def _loop(fields: list[tuple[int, Any]]) -> Node:
    parts = tuple(_node(_one(fields, n, b"")) for n in (2, 4, 5, 6, 7))
    names = (_text(_one(fields, 1)), _text(_one(fields, 8)), _text(_one(fields, 3)))
    return Node("loop", args=parts, vars=names)


# cel.expr.Expr: the kind of each node is the field that is set.
_READERS = {3: _const, 4: _ident, 5: _select, 6: _call, 7: _list, 8: _struct, 9: _loop}
