"""CEL expressions for policy rules, on `cel-python` (module `celpy`).

`compile_expression` parses an expression once and checks its names: every
free identifier must be one of the declared variables and every function a
known one, so a misspelt `incidnet.namespace` fails the load instead of every
evaluation (the library itself checks only the syntax when compiling).
`Expression.evaluate` runs it on plain JSON-like data.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import celpy
import celpy.celtypes
import celpy.evaluation
from lark import Token, Tree

__all__ = ["CelError", "Expression", "compile_expression", "to_cel"]

# Macros: expanded by the parser, not looked up as functions.
_GLOBAL_MACROS = frozenset({"has"})
_METHOD_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_FUNCTIONS = frozenset(name for name in celpy.evaluation.base_functions if name[0].isalpha())
_MAX_EXPRESSION_CHARS = 4096


class CelError(ValueError):
    """An expression that does not compile or does not evaluate; one line, no data values."""


class Expression:
    """A compiled CEL expression."""

    __slots__ = ("_program", "source")

    def __init__(self, source: str, program: celpy.Runner) -> None:
        self.source = source
        self._program = program

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """The value on `activation` (already converted with `to_cel`); CelError on failure."""
        try:
            return self._program.evaluate(dict(activation))
        except celpy.CELEvalError as exc:
            raise CelError(_eval_message(exc)) from None

    def holds(self, activation: Mapping[str, Any]) -> bool:
        """True or false on `activation`; CelError when it fails or is not a boolean."""
        value = self.evaluate(activation)
        if not isinstance(value, celpy.celtypes.BoolType):
            raise CelError("did not evaluate to true or false")
        return bool(value)


def to_cel(data: Mapping[str, Any]) -> dict[str, Any]:
    """Plain JSON-like variables as CEL values."""
    return {name: celpy.json_to_cel(value) for name, value in data.items()}


def compile_expression(source: str, variables: Collection[str]) -> Expression:
    """Compile `source`; CelError (one line) for bad syntax or an unknown name."""
    if not isinstance(source, str) or not source.strip():
        raise CelError("must be a non-empty CEL expression")
    if len(source) > _MAX_EXPRESSION_CHARS:
        raise CelError(f"is longer than {_MAX_EXPRESSION_CHARS} characters")
    env = celpy.Environment()
    try:
        ast = env.compile(source)
    except celpy.CELParseError as exc:
        where = f" at line {exc.line} column {exc.column}" if exc.line else ""
        raise CelError(f"is not valid CEL: syntax error{where}") from None
    _check_names(ast, frozenset(variables))
    return Expression(source, env.program(ast))


def _check_names(ast: Tree[Any], variables: frozenset[str]) -> None:
    bound: set[str] = set()
    idents: list[str] = []
    for node in ast.iter_subtrees():
        if node.data == "ident":
            idents.append(str(node.children[0]))
        elif node.data == "ident_arg":
            name = str(node.children[0])
            if name not in _FUNCTIONS and name not in _GLOBAL_MACROS:
                raise CelError(f"is not valid CEL: unknown function {name}()")
        elif node.data == "member_dot_arg":
            name = str(node.children[1])
            if name in _METHOD_MACROS:
                bound.update(_first_argument_name(node))
            elif name not in _FUNCTIONS:
                raise CelError(f"is not valid CEL: unknown function .{name}()")
    for name in idents:
        if name not in variables and name not in bound:
            known = ", ".join(sorted(variables))
            raise CelError(f"is not valid CEL: unknown name {name!r} (known: {known})")


def _first_argument_name(call: Tree[Any]) -> list[str]:
    """The variable a macro binds: `x` in `list.exists(x, x > 1)`."""
    args = call.children[2] if len(call.children) > 2 else None
    if not isinstance(args, Tree) or not args.children:
        return []
    first = args.children[0]
    if not isinstance(first, Tree):
        return []
    for node in first.iter_subtrees():
        if node.data == "ident" and isinstance(node.children[0], Token):
            return [str(node.children[0])]
    return []


def _eval_message(exc: celpy.CELEvalError) -> str:
    """What went wrong, without the values involved (they may be incident data)."""
    first = exc.args[0] if exc.args else ""
    text = str(first) if isinstance(first, str) else type(first).__name__
    if "no such member" in text or "no such key" in text:
        return "a field or key it reads is absent (guard it with has() or 'in')"
    if "no matching overload" in text or "no such overload" in text:
        return "an operator or function got values of the wrong type"
    if "undeclared reference" in text:
        return "it reads a name that is not declared"
    return "it could not be evaluated"
