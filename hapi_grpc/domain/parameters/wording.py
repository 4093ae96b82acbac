"""The wording of every message and example the validator produces.

Design notes: docs/internals.md (`domain/parameters/wording.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from hapi_grpc.domain.catalog import ParameterSpec
from hapi_grpc.domain.parameters.display import (
    ECHO_CHARS,
    json_type,
    show_enum_value,
    show_number,
    show_value,
)
from hapi_grpc.domain.parameters.limits import MAX_PATTERN_LENGTH, MAX_SAFE_INTEGER
from hapi_grpc.domain.parameters.outcome import ParameterErrorCode, ParameterIssue
from hapi_grpc.domain.parameters.patterns import PatternProblem
from hapi_grpc.domain.parameters.rules import (
    ArrayRule,
    BooleanRule,
    Finding,
    NumberRule,
    Reason,
    Rule,
    StringRule,
    not_provided,
)
from hapi_grpc.domain.sensitive import REDACTED

__all__ = ["Phrases"]

Code = ParameterErrorCode

_DESCRIPTION_CHARS = 120
_ENUM_SHOWN = 20  # enum values listed in a message

_ARTICLES = {"integer": "an", "array": "an"}

_TYPE_PROBLEMS = {
    Reason.NONE: "",
    Reason.INVALID_UNICODE: " (it is not valid Unicode text)",
    Reason.NOT_WHOLE: " (a whole number is required)",
    Reason.NOT_FINITE: " (NaN and infinities are not allowed)",
    Reason.BEYOND_FLOAT_RANGE: " (it is beyond the range of a finite number)",
}

_PATTERN_PROBLEMS = {
    PatternProblem.TOO_LONG: f"it is longer than {MAX_PATTERN_LENGTH} characters",
    PatternProblem.INVALID: "it is not a valid regular expression (RE2 syntax)",
}


class Phrases:
    """Everything said about one declared parameter."""

    __slots__ = (
        "dep_messages",
        "eg_text",
        "enum_text",
        "example",
        "length_text",
        "missing_issue",
        "range_text",
        "req_text",
        "rule",
        "too_long_text",
    )

    def __init__(self, rule: Rule, spec: ParameterSpec) -> None:
        self.rule = rule
        self.length_text = self.too_long_text = self.range_text = self.enum_text = ""
        if rule.enum_list is not None:
            self.enum_text = _enum_phrase(rule.enum_list)
        if isinstance(rule, StringRule):
            self.length_text = _length_phrase(rule)
            # Without a declared maximum only the cap can be exceeded: say so, not "at least N".
            self.too_long_text = (
                self.length_text
                if rule.max_len_declared is not None
                else f"at most {rule.max_len} characters long"
            )
        elif isinstance(rule, NumberRule):
            self.range_text = _range_phrase(rule.minimum, rule.maximum)
        self.example = _pick_example(rule, spec)
        self.eg_text = f" (e.g. {self.example})" if self.example else ""
        self.req_text = self.requirement()
        self.missing_issue = ParameterIssue(rule.name, Code.MISSING, self._missing_message(spec))
        self.dep_messages: dict[str, str] = {}

    def link(self, declared: Mapping[str, Phrases]) -> None:
        """Phrase the dependency messages once every parameter has its example."""
        name = self.rule.name
        for lookup, dep in self.rule.deps:
            target = declared.get(dep) if lookup is not None else None
            if target is None:
                self.dep_messages[dep] = (
                    f"{name} requires {dep}, which this workflow does not declare"
                    f" (undeclared parameters are removed); omit {name}"
                )
            else:
                self.dep_messages[dep] = (
                    f"{name} requires {dep} to be set as well"
                    f" ({target.requirement(with_article=False)}{target.example_suffix()});"
                    f" provide {dep} or omit {name}"
                )

    # Requirements -----------------------------------------------------------

    def example_suffix(self) -> str:
        return f", e.g. {self.example}" if self.example else ""

    def requirement(self, *, with_article: bool = True) -> str:
        """What a valid value is, e.g. 'an integer from 1 to 10'."""
        kind = self.rule.kind
        noun = f"{_ARTICLES.get(kind, 'a')} {kind}" if with_article else kind
        if self.rule.enum_list is not None:
            return f"{noun}, {self.enum_text}"
        constraint = self._constraint()
        return f"{noun} {constraint}" if constraint else noun

    def _constraint(self) -> str:
        rule = self.rule
        if isinstance(rule, StringRule):
            parts = []
            if rule.min_len or rule.max_len_declared is not None:
                parts.append(self.length_text)
            if rule.pattern is not None:
                parts.append(f"matching {rule.pattern.source}")
            return " and ".join(parts)
        if isinstance(rule, NumberRule):
            low, high = rule.minimum, rule.maximum
            if low is not None and high is not None:
                return self.range_text
            if low is not None:
                return f">= {show_number(low)}"
            if high is not None:
                return f"<= {show_number(high)}"
        return ""

    def _missing_message(self, spec: ParameterSpec) -> str:
        hint = self.requirement(with_article=False)
        if self.rule.enum_list is None:
            hint += self.example_suffix()
        message = f"Missing required parameter: {self.rule.name} ({hint})"
        description = " ".join(spec.description.split())
        if description:
            if len(description) > _DESCRIPTION_CHARS:
                description = description[:_DESCRIPTION_CHARS] + "…"
            message += f" — {description}"
        return message

    # Findings to issues (error path only) -----------------------------------

    def issue(self, finding: Finding) -> ParameterIssue:
        return ParameterIssue(self.rule.name, finding.code, _MESSAGES[finding.code](self, finding))

    def shown(self, value: Any) -> str:
        return REDACTED if self.rule.secret else show_value(value)

    def _missing(self, finding: Finding) -> str:
        return self.missing_issue.message

    def _missing_dependency(self, finding: Finding) -> str:
        return self.dep_messages[finding.dependency]

    def _wrong_type(self, finding: Finding) -> str:
        value = finding.value
        jtype = json_type(value)
        got = f"{jtype} {self.shown(value)}" if jtype != "object" else "an object"
        example = "" if self.rule.enum_list is not None else self.eg_text
        problem = _TYPE_PROBLEMS[finding.reason]
        return f"{self.rule.name} must be {self.req_text}{example}; got {got}{problem}"

    def _length(self, finding: Finding) -> str:
        limit = self.too_long_text if finding.code is Code.TOO_LONG else self.length_text
        size = finding.size
        return (
            f"{self.rule.name} must be {limit}{self.eg_text};"
            f" got {self.shown(finding.value)} ({size} character{'' if size == 1 else 's'})"
        )

    def _out_of_range(self, finding: Finding) -> str:
        shown = self.shown(finding.value)
        if finding.reason is Reason.UNSAFE_INTEGER:
            limit = (
                f"at most {MAX_SAFE_INTEGER}"
                if finding.code is Code.ABOVE_MAXIMUM
                else f"at least {-MAX_SAFE_INTEGER}"
            )
            return (
                f"{self.rule.name} must be {limit} (larger whole numbers cannot be represented"
                f" exactly){self.eg_text}; got {shown}"
            )
        return f"{self.rule.name} must be {self.range_text}{self.eg_text}; got {shown}"

    def _not_in_enum(self, finding: Finding) -> str:
        rule, value = self.rule, finding.value
        message = f"{rule.name} must be {self.enum_text}; got {self.shown(value)}"
        if not rule.secret and isinstance(value, str) and rule.enum_list is not None:
            folded = value.casefold()
            for allowed in rule.enum_list:
                if isinstance(allowed, str) and allowed.casefold() == folded:
                    message += f" (did you mean {allowed!r}? matching is case-sensitive)"
                    break
        return message

    def _pattern_mismatch(self, finding: Finding) -> str:
        rule = self.rule
        assert isinstance(rule, StringRule)
        name = rule.name
        if finding.reason is Reason.PATTERN_UNUSABLE:
            assert rule.pattern_problem is not None
            return (
                f"{name} cannot be accepted: the workflow schema's pattern for it"
                f" is unusable ({_PATTERN_PROBLEMS[rule.pattern_problem]}); omit {name}"
                " if it is optional, or choose another workflow"
            )
        assert rule.pattern is not None
        shown = self.shown(finding.value)
        return f"{name} must match {rule.pattern.source}{self.eg_text}; got {shown}"


_MESSAGES: dict[ParameterErrorCode, Callable[[Phrases, Finding], str]] = {
    Code.MISSING: Phrases._missing,
    Code.WRONG_TYPE: Phrases._wrong_type,
    Code.NOT_IN_ENUM: Phrases._not_in_enum,
    Code.BELOW_MINIMUM: Phrases._out_of_range,
    Code.ABOVE_MAXIMUM: Phrases._out_of_range,
    Code.TOO_SHORT: Phrases._length,
    Code.TOO_LONG: Phrases._length,
    Code.PATTERN_MISMATCH: Phrases._pattern_mismatch,
    Code.MISSING_DEPENDENCY: Phrases._missing_dependency,
}


# --- phrases of bounds --------------------------------------------------------


def _length_phrase(rule: StringRule) -> str:
    if rule.min_len and rule.max_len_declared is not None:
        return f"from {rule.min_len} to {rule.max_len} characters long"
    if rule.min_len:
        return f"at least {rule.min_len} characters long"
    return f"at most {rule.max_len} characters long"


def _enum_phrase(enum_list: tuple[Any, ...]) -> str:
    shown = ", ".join(show_enum_value(v) for v in enum_list[:_ENUM_SHOWN])
    if len(enum_list) > _ENUM_SHOWN:
        shown += f", … ({len(enum_list) - _ENUM_SHOWN} more)"
    return f"one of [{shown}]"


def _range_phrase(low: int | float | None, high: int | float | None) -> str:
    if low is not None and high is not None:
        return f"from {show_number(low)} to {show_number(high)}"
    if low is not None:
        return f"at least {show_number(low)}"
    if high is not None:
        return f"at most {show_number(high)}"
    return ""


# --- examples -----------------------------------------------------------------


def _pick_example(rule: Rule, spec: ParameterSpec) -> str:
    """The first candidate that passes the rule's own checks, rendered; '' if none."""
    if rule.secret:
        return ""  # a default for a credential may itself be one
    candidates: list[Any] = []
    if spec.default is not None:
        candidates.append(spec.default)
    if rule.enum_list:
        candidates.append(rule.enum_list[0])
    candidates.extend(_candidates(rule, spec))
    for candidate in candidates:
        scratch: list[Finding] = []
        try:
            normalised = rule.check(candidate, scratch)
        except Exception:  # a strange default must not break compilation
            continue
        if not scratch and not not_provided(normalised):
            return show_value(normalised)
    return ""


def _candidates(rule: Rule, spec: ParameterSpec) -> list[Any]:
    """Generic values of the rule's type likely to pass its checks."""
    if isinstance(rule, StringRule):
        if spec.pattern is not None:
            return []  # no generic string is likely to match a pattern
        size = min(max(len("example"), rule.min_len), rule.max_len)
        if size > ECHO_CHARS:
            return []
        return [("example" + "x" * size)[:size]]
    if isinstance(rule, NumberRule):
        low, high = rule.minimum, rule.maximum
        if any(b is not None and not math.isfinite(b) for b in (low, high)):
            return []
        guess: float = 1
        if low is not None and guess < low:
            guess = low
        if high is not None and guess > high:
            guess = high
        return [guess, math.ceil(guess), math.floor(guess)]
    if isinstance(rule, BooleanRule):
        return [True, False]
    if isinstance(rule, ArrayRule):
        return [[]]
    return []
