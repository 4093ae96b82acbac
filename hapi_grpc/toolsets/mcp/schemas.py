"""A tool server's input schema as a validator whose patterns run in linear time.

Design notes: docs/internals.md (`toolsets/mcp/schemas.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any

import jsonschema
import re2
from jsonschema import validators
from jsonschema.protocols import Validator

from hapi_grpc.domain.bounded_json import MAX_DEPTH, check_depth

__all__ = ["MAX_SCHEMA_CHARS", "linear_validator", "problem_text"]

MAX_SCHEMA_CHARS = 16_000


def linear_validator(schema: dict[str, Any]) -> Validator:
    """A validator of `schema` that matches patterns with RE2; raises jsonschema.SchemaError
    (also for a schema nested past MAX_DEPTH or larger than MAX_SCHEMA_CHARS)."""
    try:
        check_depth(schema)
    except ValueError as exc:
        raise jsonschema.SchemaError(str(exc)) from None
    if len(json.dumps(schema, default=str)) > MAX_SCHEMA_CHARS:
        raise jsonschema.SchemaError(f"larger than {MAX_SCHEMA_CHARS} characters")
    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    for key, value in _keywords(schema):
        if key == "patternProperties":
            raise jsonschema.SchemaError("patternProperties is not supported")
        try:
            _compiled(value)
        except re2.error:
            raise jsonschema.SchemaError(
                f"pattern {value[:80]!r} is not RE2 syntax (linear-time matching)"
            ) from None
    return _linear(cls)(schema, format_checker=_format_checker(cls))


def _keywords(schema: Any) -> Iterator[tuple[str, Any]]:
    """Every `pattern` string and `patternProperties` object anywhere in `schema`
    (a property of that name counts too: refusing it errs on the safe side)."""
    stack = [schema]
    while stack:  # bounded: the schema's size is capped before it gets here
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if (key == "pattern" and isinstance(value, str)) or (
                    key == "patternProperties" and isinstance(value, dict)
                ):
                    yield key, value
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


@cache  # one checker per draft
def _format_checker(cls: type[Validator]) -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(cls.FORMAT_CHECKER.checkers)
    checker.checkers = dict(cls.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=(re.error, ValueError))(_is_regex)
    return checker


def _is_regex(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    depth = deepest = 0
    escaped = False
    for char in instance:  # bounded: arguments are at most 64 KiB
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > MAX_DEPTH:
        raise ValueError(f"groups nested deeper than {MAX_DEPTH} levels")
    re.compile(instance)
    return True


@cache  # one class per draft
def _linear(cls: type[Validator]) -> type[Validator]:
    return validators.extend(cls, {"pattern": _pattern})


def _pattern(validator: Validator, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and _compiled(pattern).search(instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@lru_cache(maxsize=1024)  # bounded: tool servers may list any number of patterns
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern)


def problem_text(err: jsonschema.ValidationError) -> str:
    """What is wrong; for a format, without the value (the message would quote it whole)."""
    if err.validator == "format":
        cause = f" ({str(err.cause)[:80]})" if err.cause is not None else ""
        return f"is not a valid {err.validator_value}{cause}"
    return err.message
