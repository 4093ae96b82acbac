"""CEL expressions for policy rules, on Google's CEL C++ runtime (`cel-expr-python`).

Design notes: docs/internals.md (`domain/policy/cel.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cache
from typing import Any

from cel_expr_python import cel

from hapi_grpc.domain.cel_cost import ITERATION_BUDGET, OUTSIDE, check_limits

__all__ = ["Activation", "CelError", "Expression", "activation", "compile_expression"]

Activation = Any  # cel.Activation: the variables of one evaluation

_MAX_EXPRESSION_CHARS = 4096
_MAX_MESSAGE_CHARS = 160


class CelError(ValueError):
    """An expression that does not compile or does not evaluate; one line, no data values."""


class Expression:
    """A compiled, type-checked CEL expression."""

    __slots__ = ("_program", "source")

    def __init__(self, source: str, program: Any) -> None:
        self.source = source
        self._program = program

    def evaluate(self, variables: Activation) -> Any:
        """The plain value on `variables` (from `activation`); CelError when it fails."""
        try:
            value = self._program.eval(variables)
        except RuntimeError as exc:  # the runtime's iteration budget, raised not returned
            raise CelError(_eval_message(str(exc))) from None
        if value.type() == cel.Type.ERROR:
            raise CelError(_eval_message(str(value.value())))
        return value.plain_value()

    def holds(self, variables: Activation) -> bool:
        """True or false on `variables`; CelError when it fails or is not a boolean."""
        value = self.evaluate(variables)
        if not isinstance(value, bool):
            raise CelError("did not evaluate to true or false")
        return value


@cache
def _env(variables: tuple[str, ...]) -> Any:
    return cel.NewEnv(variables={name: cel.Type.DYN for name in variables})


def activation(variables: Mapping[str, Any]) -> Activation:
    """The variables of one evaluation (plain JSON-like values), converted once."""
    return _env(tuple(sorted(variables))).Activation(dict(variables))


def compile_expression(
    source: str, variables: Collection[str], *, result: str = "BOOL"
) -> Expression:
    """Compile and type-check `source`; `result` is the type it must be able to give
    (BOOL or STRING). CelError (one line) for bad syntax, an unknown name or a type."""
    if not isinstance(source, str) or not source.strip():
        raise CelError("must be a non-empty CEL expression")
    if len(source) > _MAX_EXPRESSION_CHARS:
        raise CelError(f"is longer than {_MAX_EXPRESSION_CHARS} characters")
    try:
        program = _env(tuple(sorted(variables))).compile(source)
    except RuntimeError as exc:
        raise CelError(f"is not valid CEL: {_compile_message(str(exc))}") from None
    try:
        check_limits(source, program, OUTSIDE)
    except ValueError as exc:
        raise CelError(str(exc)) from None
    given = program.return_type().name()
    if given not in (result, "DYN"):
        wanted = "true or false" if result == "BOOL" else "a string"
        raise CelError(f"must give {wanted}, but gives {given.lower()}")
    return Expression(source, program)


def _compile_message(text: str) -> str:
    """The first problem of the compiler's report, on one line: 'line 1 column 5: ...'."""
    first = text.split("\n", 1)[0].removeprefix("INVALID_ARGUMENT: ").removeprefix("ERROR: ")
    if first.startswith("<input>:"):
        where, _, rest = first.removeprefix("<input>:").partition(": ")
        line, _, column = where.partition(":")
        first = f"line {line} column {column}: {rest}"
    first = first.replace(" (in container '')", "").split(" expecting {", 1)[0]
    return " ".join(first.split())[:_MAX_MESSAGE_CHARS]


def _eval_message(text: str) -> str:
    """What went wrong, without the values involved (they may be incident data)."""
    lowered = text.lower()
    if "key not found" in lowered or "no such key" in lowered or "no such field" in lowered:
        return "a field or key it reads is absent (guard it with has() or 'in')"
    if "no matching overload" in lowered or "cannot convert" in lowered:
        return "an operator or function got values of the wrong type"
    if "iteration budget" in lowered:
        return f"its loops ran past the runtime's budget of {ITERATION_BUDGET} iterations"
    return "it could not be evaluated"
