"""A tool server's input schema as a validator whose patterns run in linear time.

jsonschema matches `pattern` with Python's backtracking `re`: a server's
`"^(a+)+$"` and thirty characters of a model's argument would hold the event
loop for seconds. Here `pattern` is matched with RE2. A schema with a pattern
RE2 cannot compile (back-references, look-around), or with `patternProperties`
(which jsonschema also matches inside `additionalProperties` and
`unevaluatedProperties`), is refused as a SchemaError, and the tool is not
offered.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any

import jsonschema
import re2
from jsonschema import validators
from jsonschema.protocols import Validator

__all__ = ["linear_validator"]


def linear_validator(schema: dict[str, Any]) -> Validator:
    """A validator of `schema` that matches patterns with RE2; raises jsonschema.SchemaError."""
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
    return _linear(cls)(schema, format_checker=cls.FORMAT_CHECKER)


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


@cache  # one class per draft
def _linear(cls: type[Validator]) -> type[Validator]:
    return validators.extend(cls, {"pattern": _pattern})


def _pattern(validator: Validator, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and _compiled(pattern).search(instance) is None:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@lru_cache(maxsize=1024)  # bounded: tool servers may list any number of patterns
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern)
