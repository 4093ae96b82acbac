"""The rule checks: one compiled rule per declared parameter.

A rule's `check(value, found)` returns the value to keep in the sanitized
output and appends a `Finding` (a code plus the data a message needs) for
each rule the value breaks. Rules hold no wording: `wording` turns findings
into sentences, and only when there are findings.
"""

from __future__ import annotations

import copy
import enum
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from hapi_grpc.domain.catalog import ParameterSpec
from hapi_grpc.domain.parameters.limits import MAX_SAFE_INTEGER, MAX_STRING_LENGTH
from hapi_grpc.domain.parameters.outcome import ParameterErrorCode
from hapi_grpc.domain.parameters.patterns import Pattern, PatternProblem, compile_pattern
from hapi_grpc.domain.sensitive import is_secret_name

Code = ParameterErrorCode

_FLOAT_MAX = sys.float_info.max


class Reason(enum.Enum):
    """Which variant of a code's message applies."""

    NONE = enum.auto()
    INVALID_UNICODE = enum.auto()  # WRONG_TYPE: a string with lone surrogates
    NOT_WHOLE = enum.auto()  # WRONG_TYPE: integer expected, fraction given
    NOT_FINITE = enum.auto()  # WRONG_TYPE: NaN or an infinity
    BEYOND_FLOAT_RANGE = enum.auto()  # WRONG_TYPE: an int no double can hold
    UNSAFE_INTEGER = enum.auto()  # ABOVE_MAXIMUM/BELOW_MINIMUM: beyond MAX_SAFE_INTEGER
    PATTERN_UNUSABLE = enum.auto()  # PATTERN_MISMATCH: the schema's pattern is at fault
    UNDECLARED_DEPENDENCY = enum.auto()  # MISSING_DEPENDENCY: can never be satisfied


class Finding(NamedTuple):
    """One broken rule: what a message about it needs to know."""

    code: ParameterErrorCode
    value: Any = None
    reason: Reason = Reason.NONE
    size: int = 0  # string length, for TOO_LONG/TOO_SHORT
    dependency: str = ""  # for MISSING_DEPENDENCY


def not_provided(value: Any) -> bool:
    """Null and "" mean "not set"."""
    return value is None or (isinstance(value, str) and not value)


class Rule:
    """One declared parameter, compiled for repeated checks."""

    __slots__ = ("deps", "enum_list", "enum_set", "name", "required", "secret")

    kind = "value"  # the JSON type checked, as named in messages

    def __init__(self, spec: ParameterSpec) -> None:
        self.name = spec.name
        self.required = spec.required
        self.secret = is_secret_name(spec.name)
        self.enum_list: tuple[Any, ...] | None = None
        self.enum_set: frozenset[Any] | None = None
        if spec.enum is not None:
            self.enum_list = tuple(self._normalise_enum(v) for v in spec.enum)
            try:
                self.enum_set = frozenset(self.enum_list)
            except TypeError:  # unhashable entries (arrays): linear scan instead
                self.enum_set = None
        # (name to look up or None for "never satisfied", dependency name)
        self.deps: tuple[tuple[str | None, str], ...] = ()

    def check(self, value: Any, found: list[Finding]) -> Any:
        raise NotImplementedError

    def _normalise_enum(self, value: Any) -> Any:
        return value

    def link(self, spec: ParameterSpec, declared: Mapping[str, Rule]) -> None:
        """Resolve `depends_on` once every declared parameter has its rule."""
        deps: list[tuple[str | None, str]] = []
        seen: set[str] = set()
        for dep in spec.depends_on:
            if dep == self.name or dep in seen:
                continue
            seen.add(dep)
            target = declared.get(dep)
            if target is None:
                # Undeclared parameters are stripped, so this one can never be present.
                deps.append((None, dep))
            elif not target.required:  # a required one's own MISSING error asks for it
                deps.append((dep, dep))
        self.deps = tuple(deps)

    def check_enum(self, value: Any, found: list[Finding]) -> bool:
        assert self.enum_list is not None
        if self.enum_set is not None:
            try:
                if value in self.enum_set:
                    return True
            except TypeError:  # unhashable value cannot be in a set of hashables
                pass
        elif value in self.enum_list:
            return True
        found.append(Finding(Code.NOT_IN_ENUM, value))
        return False

    def check_deps(self, get: Callable[[str], Any], found: list[Finding]) -> None:
        for lookup, dep in self.deps:
            if lookup is None:
                found.append(
                    Finding(Code.MISSING_DEPENDENCY, None, Reason.UNDECLARED_DEPENDENCY, 0, dep)
                )
            elif not_provided(get(lookup)):
                found.append(Finding(Code.MISSING_DEPENDENCY, None, Reason.NONE, 0, dep))


class StringRule(Rule):
    __slots__ = ("max_len", "max_len_declared", "min_len", "pattern", "pattern_problem")

    kind = "string"

    def __init__(self, spec: ParameterSpec) -> None:
        super().__init__(spec)
        self.min_len = spec.min_length or 0
        self.max_len_declared = spec.max_length
        self.max_len = MAX_STRING_LENGTH
        if spec.max_length is not None and spec.max_length < MAX_STRING_LENGTH:
            self.max_len = spec.max_length
        self.pattern: Pattern | None = None
        self.pattern_problem: PatternProblem | None = None
        if spec.pattern is not None:
            compiled = compile_pattern(spec.pattern)
            if isinstance(compiled, PatternProblem):
                self.pattern_problem = compiled
            else:
                self.pattern = compiled

    def check(self, value: Any, found: list[Finding]) -> Any:
        if not isinstance(value, str):
            found.append(Finding(Code.WRONG_TYPE, value))
            return value
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                found.append(Finding(Code.WRONG_TYPE, value, Reason.INVALID_UNICODE))
                return value
        if self.enum_list is not None and not self.check_enum(value, found):
            return value
        size = len(value)
        if size > self.max_len:
            found.append(Finding(Code.TOO_LONG, value, Reason.NONE, size))
            if size > MAX_STRING_LENGTH:
                return value  # too long to be worth matching
        elif size < self.min_len:
            found.append(Finding(Code.TOO_SHORT, value, Reason.NONE, size))
        if self.pattern is not None:
            if not self.pattern.search(value):
                found.append(Finding(Code.PATTERN_MISMATCH, value))
        elif self.pattern_problem is not None:
            found.append(Finding(Code.PATTERN_MISMATCH, value, Reason.PATTERN_UNUSABLE))
        return value


class NumberRule(Rule):
    """Shared bounds handling of `integer` and `float`/`number`."""

    __slots__ = ("maximum", "minimum")

    def __init__(self, spec: ParameterSpec) -> None:
        super().__init__(spec)
        self.minimum = spec.minimum
        self.maximum = spec.maximum

    def check_bounds(self, number: int | float, found: list[Finding]) -> bool:
        """False (and a finding) when `number` is out of the declared bounds."""
        if self.minimum is not None and number < self.minimum:
            found.append(Finding(Code.BELOW_MINIMUM, number))
        elif self.maximum is not None and number > self.maximum:
            found.append(Finding(Code.ABOVE_MAXIMUM, number))
        else:
            return True
        return False


class IntegerRule(NumberRule):
    __slots__ = ()

    kind = "integer"

    def _normalise_enum(self, value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def check(self, value: Any, found: list[Finding]) -> Any:
        kind = type(value)
        if kind is int:
            number = value
        elif kind is float:
            if not value.is_integer():  # also false for NaN and infinities
                found.append(Finding(Code.WRONG_TYPE, value, Reason.NOT_WHOLE))
                return value
            number = int(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = int(value)
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        else:
            found.append(Finding(Code.WRONG_TYPE, value))
            return value
        if self.enum_list is not None and not self.check_enum(number, found):
            return number
        if (self.minimum is not None or self.maximum is not None) and not self.check_bounds(
            number, found
        ):
            return number
        if number > MAX_SAFE_INTEGER:
            found.append(Finding(Code.ABOVE_MAXIMUM, number, Reason.UNSAFE_INTEGER))
        elif number < -MAX_SAFE_INTEGER:
            found.append(Finding(Code.BELOW_MINIMUM, number, Reason.UNSAFE_INTEGER))
        return number


class FloatRule(NumberRule):
    __slots__ = ()

    kind = "number"

    def check(self, value: Any, found: list[Finding]) -> Any:
        if type(value) is float or isinstance(value, float):
            if not math.isfinite(value):
                found.append(Finding(Code.WRONG_TYPE, value, Reason.NOT_FINITE))
                return value
        elif not isinstance(value, int) or isinstance(value, bool):
            found.append(Finding(Code.WRONG_TYPE, value))
            return value
        elif not -_FLOAT_MAX <= value <= _FLOAT_MAX:
            found.append(Finding(Code.WRONG_TYPE, value, Reason.BEYOND_FLOAT_RANGE))
            return value
        if self.enum_list is not None and not self.check_enum(value, found):
            return value
        if self.minimum is not None or self.maximum is not None:
            self.check_bounds(value, found)
        return value


class BooleanRule(Rule):
    __slots__ = ()

    kind = "boolean"

    def check(self, value: Any, found: list[Finding]) -> Any:
        if value is not True and value is not False:
            found.append(Finding(Code.WRONG_TYPE, value))
            return value
        if self.enum_list is not None:
            self.check_enum(value, found)
        return value


class ArrayRule(Rule):
    __slots__ = ()

    kind = "array"

    def _normalise_enum(self, value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value

    def check(self, value: Any, found: list[Finding]) -> Any:
        if not isinstance(value, list | tuple):
            found.append(Finding(Code.WRONG_TYPE, value))
            return value
        # A deep copy, so the caller mutating its input cannot change a verdict's output.
        items = copy.deepcopy(list(value))
        if self.enum_list is not None:
            self.check_enum(items, found)
        return items


RULE_TYPES: dict[str, type[Rule]] = {
    "string": StringRule,
    "integer": IntegerRule,
    "float": FloatRule,
    "number": FloatRule,
    "boolean": BooleanRule,
    "array": ArrayRule,
}
