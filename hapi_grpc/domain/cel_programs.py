"""CEL programs: the environment every catalog and premise-pack expression is
compiled in (`incident`, `observed`, `params`, `workflow`, and `quantity()`), and
the compiled programs, kept (bounded) by expression and limits.

A program of either environment (with or without the strings extension)
evaluates on an activation of `environment()`.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

from cel_expr_python import cel

from hapi_grpc.domain.cel_cost import CelLimits, check_limits
from hapi_grpc.domain.quantity import QuantityError, parse_quantity

__all__ = ["check_expression", "compile_expression", "environment"]


@lru_cache(maxsize=1024)  # the same few limits are compared again and again
def _quantity(text: str) -> float:
    try:
        return float(parse_quantity(text))
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


@cache
def environment(strings: bool = False) -> Any:
    """The environment; with `strings`, also the strings extension (join, lowerAscii,
    ...), as in Kubernetes' CEL. That extension is a native library of its own (~3.5 MB
    resident once loaded), so it is loaded only for a catalog expression that uses it."""
    extensions = []
    if strings:
        from cel_expr_python.ext.ext_strings import ExtStrings

        extensions = [ExtStrings()]
    return cel.NewEnv(
        variables={
            "incident": cel.Type.DYN,
            "observed": cel.Type.DYN,
            "params": cel.Type.DYN,
            # The workflow judged (`id`, `action_type`, `gitops`): the premise packs'
            # conditions read it (`domain.premises`).
            "workflow": cel.Type.DYN,
        },
        extensions=extensions,
        functions=[
            cel.FunctionDecl(
                "quantity",
                [
                    cel.Overload(
                        "quantity_string", cel.Type.DOUBLE, [cel.Type.STRING], impl=_quantity
                    )
                ],
            )
        ],
    )


def check_expression(expression: str, limits: CelLimits | None = None) -> None:
    """Compile and type-check without keeping the program; raises ValueError."""
    _compile(expression, limits)


@lru_cache(maxsize=4096)  # bounded: Data Storage may send any number of expressions
def compile_expression(expression: str, limits: CelLimits | None = None) -> Any:
    """The compiled, type-checked program, kept; raises ValueError naming the problem.
    With `limits` (an expression from outside), also refused past them."""
    return _compile(expression, limits)


def _compile(expression: str, limits: CelLimits | None = None) -> Any:
    if limits is not None and len(expression) > limits.max_chars:
        raise ValueError(f"CEL expression is longer than {limits.max_chars} characters")
    program = _compiled(expression)
    if limits is not None:
        try:
            check_limits(expression, program, limits)
        except ValueError as exc:
            raise ValueError(f"CEL expression refused: it {exc}") from None
    return program


def _compiled(expression: str) -> Any:
    try:
        return environment().compile(expression)
    except RuntimeError:
        pass  # perhaps a function of the strings extension: the language includes it
    try:
        # A program of either environment evaluates on an activation of the first.
        return environment(strings=True).compile(expression)
    except RuntimeError as exc:
        raise ValueError(f"CEL expression does not compile: {exc}") from None
