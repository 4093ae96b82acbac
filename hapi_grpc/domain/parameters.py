"""Validation of proposed workflow parameters against a workflow's parameter schema.

`validate_parameters` is the single entry point. It serves the LLM tool
`validate_workflow_parameters`, the check of the investigation's final answer,
the `ValidateWorkflowParameters` RPC and Python clients. It is pure: no I/O
beyond a WARNING log when undeclared parameters are stripped.

Semantics (BR-HAPI-191 and the Data Storage contract):

- A value is *not provided* when its key is absent, or it is null, or it is
  the empty string. A required parameter that is not provided is MISSING. An
  optional one is simply left out of the sanitized output (an explicit null or
  "" means "not set", which is what models mean when they send it).
- Types: `string`; `integer` (a whole number: 3 or 3.0, never "3", 3.5 or
  true; 3.0 is accepted because JSON Schema counts it as an integer and
  protobuf Struct turns every number into a float, and it is normalised to 3;
  magnitudes beyond MAX_SAFE_INTEGER are rejected, as a double cannot carry
  them exactly);
  `float`/`number` (int or float, finite, never a boolean); `boolean` (true or
  false only); `array` (a list; items are not checked).
- `enum` is exact and case-sensitive. A failed type or enum check is the only
  error reported for that parameter; otherwise every violated rule is reported
  (e.g. both TOO_LONG and PATTERN_MISMATCH), so one correction can fix all.
- `minimum`/`maximum` are inclusive and apply to numbers; `min_length`,
  `max_length` (Unicode code points) and `pattern` apply to strings; rules
  that do not apply to the declared type are ignored, as in JSON Schema.
- `pattern` has JSON Schema "search" semantics (unanchored unless the pattern
  anchors itself) and runs on RE2, whose time is linear in the input. Strings
  longer than MAX_STRING_LENGTH are rejected as TOO_LONG before any matching.
  A pattern that is longer than MAX_PATTERN_LENGTH or does not compile fails
  closed: a provided value for that parameter gets PATTERN_MISMATCH with a
  message saying the schema is at fault.
- `depends_on`: a provided parameter whose dependency is not provided gets
  MISSING_DEPENDENCY, unless the dependency is itself required (its MISSING
  error already says it). A dependency the schema does not declare can never
  be satisfied, since undeclared parameters are stripped.
- Undeclared parameters are stripped and logged by name (never by value).
- The sanitized output keeps only values that passed their own checks, so it
  is always safe to serialise. Schema defaults are not injected: the executor
  applies them.
- Messages name the parameter, what is allowed and an example, and echo at
  most a short escaped prefix of the offending value; values of parameters
  whose names look secret (`is_secret_name`) are shown as REDACTED.

Errors come in schema order; within a parameter, in the order of the checks.
"""

from __future__ import annotations

import copy
import enum
import functools
import itertools
import json
import logging
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import re2

from hapi_grpc.domain.catalog import ParameterSpec, Workflow, WorkflowSchema

__all__ = [
    "MAX_PATTERN_LENGTH",
    "MAX_SAFE_INTEGER",
    "MAX_STRING_LENGTH",
    "REDACTED",
    "ParameterErrorCode",
    "ParameterIssue",
    "ValidationOutcome",
    "is_secret_name",
    "validate_parameters",
]

logger = logging.getLogger("hapi_grpc.domain.parameters")

MAX_STRING_LENGTH = 4096
"""Longest string value accepted for any parameter, whatever its schema says."""

MAX_PATTERN_LENGTH = 512
"""Longest schema pattern that is compiled; longer ones are treated as invalid."""

MAX_SAFE_INTEGER = 2**53 - 1
"""Largest integer magnitude accepted: protobuf Struct carries numbers as doubles."""

REDACTED = "<redacted>"
"""Stands in for the value of a secret-looking parameter in every message."""

_FLOAT_MAX = sys.float_info.max

_ECHO_CHARS = 40  # prefix of an offending value shown in a message
_DESCRIPTION_CHARS = 120
_PREVIEW_ITEMS = 8  # leading items of an array or object rendered in a message
_ENUM_SHOWN = 20  # enum values listed in a message
_LOG_NAME_CHARS = 64
_LOG_NAMES_SHOWN = 20
_SCHEMA_CACHE_SIZE = 256
_PATTERN_CACHE_SIZE = 256
_RE2_MAX_MEM = 1 << 20

# Substrings of parameter names whose values are never echoed. Over-matching
# (e.g. MONKEY) only costs a less helpful message; under-matching leaks.
_SECRET_MARKERS = (
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "PWD",
    "SECRET",
    "TOKEN",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "SESSION",
    "COOKIE",
    "SIGNATURE",
    "CONNECTION_STRING",
    "DSN",
)


class ParameterErrorCode(enum.StrEnum):
    """Why a parameter failed; names match proto `PARAMETER_ERROR_CODE_<NAME>`."""

    MISSING = "MISSING"
    WRONG_TYPE = "WRONG_TYPE"
    NOT_IN_ENUM = "NOT_IN_ENUM"
    BELOW_MINIMUM = "BELOW_MINIMUM"
    ABOVE_MAXIMUM = "ABOVE_MAXIMUM"
    TOO_SHORT = "TOO_SHORT"
    TOO_LONG = "TOO_LONG"
    PATTERN_MISMATCH = "PATTERN_MISMATCH"
    MISSING_DEPENDENCY = "MISSING_DEPENDENCY"


@dataclass(frozen=True, slots=True)
class ParameterIssue:
    """One problem with one parameter, phrased so it can be fixed in one step."""

    parameter: str
    code: ParameterErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class ValidationOutcome:
    """The verdict on a set of proposed parameters.

    `sanitized` holds, in schema order, the provided declared parameters whose
    values passed their own checks, with JSON types intact (integers given as
    3.0 become 3); when `valid` it holds every provided declared parameter. It
    is a new dict on every call. `stripped` names the undeclared parameters
    that were removed, sorted.
    """

    valid: bool
    errors: tuple[ParameterIssue, ...]
    sanitized: dict[str, Any] = field(hash=False)
    stripped: tuple[str, ...] = ()

    def to_llm_dict(self) -> dict[str, Any]:
        """Compact JSON-able verdict for the model; empty lists are omitted."""
        verdict: dict[str, Any] = {"status": "valid" if self.valid else "invalid"}
        if self.errors:
            verdict["errors"] = [
                {"parameter": e.parameter, "code": e.code.value, "message": e.message}
                for e in self.errors
            ]
        if self.stripped:
            verdict["stripped_parameters"] = list(self.stripped)
        return verdict


def is_secret_name(name: str) -> bool:
    """True when a parameter name suggests its value is a credential."""
    upper = name.upper()
    return any(marker in upper for marker in _SECRET_MARKERS)


def validate_parameters(
    schema: Sequence[ParameterSpec] | WorkflowSchema | Workflow,
    parameters: Mapping[str, Any] | None,
    *,
    workflow_id: str = "",
) -> ValidationOutcome:
    """Validate `parameters` against `schema` and strip undeclared ones.

    `schema` may also be a catalog `Workflow`. `workflow_id` only labels the
    log line about stripped parameters. Raises TypeError when `parameters` is
    not a mapping or the schema holds something other than ParameterSpec.
    """
    if parameters is None:
        parameters = {}
    elif not isinstance(parameters, Mapping):
        raise TypeError(f"parameters must be a mapping, not {type(parameters).__name__}")
    outcome = _compiled(schema).validate(parameters)
    if outcome.stripped:
        _log_stripped(outcome.stripped, workflow_id)
    return outcome


# --- presentation helpers ---------------------------------------------------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _show_string(text: str) -> str:
    # repr() escapes control characters, so a value cannot forge message lines.
    if len(text) > _ECHO_CHARS:
        return repr(text[:_ECHO_CHARS]) + "…"
    return repr(text)


def _show_number(value: int | float) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if value.bit_length() > 64:  # str() of a huge int is slow and may raise
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    return str(value)


def _show_value(value: Any) -> str:
    """A short, bounded rendering of a JSON value (for messages)."""
    if isinstance(value, str):
        return _show_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _show_number(value)
    if isinstance(value, list | tuple | Mapping):
        # Only a few leading items are rendered: the text is cut short anyway.
        if isinstance(value, Mapping):
            preview: Any = dict(itertools.islice(value.items(), _PREVIEW_ITEMS))
        else:
            preview = list(value[:_PREVIEW_ITEMS])
        try:
            text = json.dumps(preview, ensure_ascii=False, default=str)
            if len(value) > _PREVIEW_ITEMS:
                text = text[:-1] + ", …" + text[-1]
        except (TypeError, ValueError, RecursionError):
            text = f"an {_json_type(value)} of {len(value)} items"
        return text if len(text) <= _ECHO_CHARS else text[:_ECHO_CHARS] + "…"
    return f"a {type(value).__name__}"


def _show_enum_value(value: Any) -> str:
    # Allowed strings are listed bare ("[Always, OnFailure, Never]").
    return value if isinstance(value, str) else _show_value(value)


def _log_safe(text: str) -> str:
    if len(text) <= _LOG_NAME_CHARS and text.isprintable():
        return text
    return repr(text[:_LOG_NAME_CHARS]) + ("…" if len(text) > _LOG_NAME_CHARS else "")


def _log_stripped(names: tuple[str, ...], workflow_id: str) -> None:
    shown = ", ".join(_log_safe(n) for n in names[:_LOG_NAMES_SHOWN])
    if len(names) > _LOG_NAMES_SHOWN:
        shown += f" and {len(names) - _LOG_NAMES_SHOWN} more"
    logger.warning(
        "Stripped %d undeclared parameter(s) for workflow %s: %s",
        len(names),
        _log_safe(workflow_id) or "<unknown>",
        shown,
        extra={"workflow_id": workflow_id, "stripped_parameters": list(names)},
    )


# --- patterns ---------------------------------------------------------------


class _Pattern:
    """A compiled schema pattern with a fast membership test.

    RE2::Set answers "does it match anywhere" without computing match spans,
    which makes it several times faster than `re2.compile(...).search` through
    the Python wrapper. A negative answer is confirmed with the full RE2 API
    because RE2::Set has no fallback when its DFA runs out of memory.
    """

    __slots__ = ("_regex", "_set", "source")

    def __init__(self, source: str, options: re2.Options) -> None:
        self.source = source
        self._regex = re2.compile(source, options)
        self._set = re2.Set.SearchSet(options)
        self._set.Add(source)
        self._set.Compile()

    def search(self, text: str) -> bool:
        """True when `text` contains a match. Raises UnicodeEncodeError on lone surrogates."""
        if self._set.Match(text) is not None:
            return True
        return self._regex.search(text) is not None


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a bad catalog pattern is reported, not printed to stderr
    options.never_capture = True
    # Bounds each compiled object (program plus lazily built DFA); a pattern too
    # big for it fails to compile and is reported as unusable.
    options.max_mem = _RE2_MAX_MEM
    return options


@functools.lru_cache(maxsize=_PATTERN_CACHE_SIZE)
def _compile_pattern(source: str) -> _Pattern | str:
    """The compiled pattern, or the reason it cannot be used."""
    if len(source) > MAX_PATTERN_LENGTH:
        return f"it is longer than {MAX_PATTERN_LENGTH} characters"
    try:
        return _Pattern(source, _re2_options())
    except Exception as exc:  # any failure means "unusable pattern", never a crash
        logger.warning("Workflow schema pattern %r does not compile: %s", source[:80], exc)
        return "it is not a valid regular expression (RE2 syntax)"


# --- compiled rules ---------------------------------------------------------


_ABSENT: Any = object()


def _not_provided(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value)


class _Rule:
    """One declared parameter, compiled for repeated checks.

    Subclasses implement `check(value, errors)`, which returns the value to
    keep in the sanitized output and appends ParameterIssues to `errors`.
    """

    __slots__ = (
        "deps",
        "eg_text",
        "enum_list",
        "enum_set",
        "example",
        "missing_issue",
        "name",
        "req_text",
        "required",
        "secret",
    )

    article = "a"
    type_noun = "value"

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
        self.deps: tuple[tuple[str | None, str], ...] = ()
        self.example = ""
        self.eg_text = ""
        self.req_text = ""
        self.missing_issue: ParameterIssue | None = None

    # Subclass hooks ---------------------------------------------------------

    def check(self, value: Any, errors: list[ParameterIssue]) -> Any:
        raise NotImplementedError

    def _normalise_enum(self, value: Any) -> Any:
        return value

    def _constraint(self) -> str:
        """Bounds of the type, e.g. 'from 1 to 10' ('' when unbounded)."""
        return ""

    def _candidate_examples(self, spec: ParameterSpec) -> list[Any]:
        return []

    def _format_example(self, value: Any) -> str:
        return _show_value(value)

    # Finishing --------------------------------------------------------------

    def finish(self, spec: ParameterSpec, declared: Mapping[str, _Rule]) -> None:
        """Precompute messages and dependencies once every rule has its example."""
        self.eg_text = f" (e.g. {self.example})" if self.example else ""
        self.req_text = self.requirement()
        self.missing_issue = ParameterIssue(
            self.name, ParameterErrorCode.MISSING, self._missing_message(spec)
        )
        # (name to look up, message); None as the name means "never satisfied".
        deps: list[tuple[str | None, str]] = []
        seen: set[str] = set()
        for dep in spec.depends_on:
            if dep == self.name or dep in seen:
                continue
            seen.add(dep)
            target = declared.get(dep)
            if target is None:
                # Undeclared parameters are stripped, so this one can never be present.
                message = (
                    f"{self.name} requires {dep}, which this workflow does not declare"
                    f" (undeclared parameters are removed); omit {self.name}"
                )
                deps.append((None, message))
                continue
            if target.required:
                continue  # its own MISSING error already asks for it
            else:
                message = (
                    f"{self.name} requires {dep} to be set as well"
                    f" ({target.requirement(with_article=False)}{target.example_suffix()});"
                    f" provide {dep} or omit {self.name}"
                )
            deps.append((dep, message))
        self.deps = tuple(deps)

    def pick_example(self, spec: ParameterSpec) -> str:
        if self.secret:
            return ""  # a default for a credential may itself be one
        candidates: list[Any] = []
        if spec.default is not None:
            candidates.append(spec.default)
        if self.enum_list:
            candidates.append(self.enum_list[0])
        candidates.extend(self._candidate_examples(spec))
        for candidate in candidates:
            scratch: list[ParameterIssue] = []
            try:
                normalised = self.check(candidate, scratch)
            except Exception:  # a strange default must not break compilation
                continue
            if not scratch and not _not_provided(normalised):
                return self._format_example(normalised)
        return ""

    def example_suffix(self) -> str:
        return f", e.g. {self.example}" if self.example else ""

    def requirement(self, *, with_article: bool = True) -> str:
        """What a valid value is, e.g. 'an integer from 1 to 10'."""
        noun = f"{self.article} {self.type_noun}" if with_article else self.type_noun
        if self.enum_list is not None:
            return f"{noun}, {self._enum_phrase()}"
        constraint = self._constraint()
        return f"{noun} {constraint}" if constraint else noun

    def _enum_phrase(self) -> str:
        assert self.enum_list is not None
        shown = ", ".join(_show_enum_value(v) for v in self.enum_list[:_ENUM_SHOWN])
        if len(self.enum_list) > _ENUM_SHOWN:
            shown += f", … ({len(self.enum_list) - _ENUM_SHOWN} more)"
        return f"one of [{shown}]"

    def _missing_message(self, spec: ParameterSpec) -> str:
        hint = self.requirement(with_article=False)
        if self.enum_list is None:
            hint += self.example_suffix()
        message = f"Missing required parameter: {self.name} ({hint})"
        description = " ".join(spec.description.split())
        if description:
            if len(description) > _DESCRIPTION_CHARS:
                description = description[:_DESCRIPTION_CHARS] + "…"
            message += f" — {description}"
        return message

    # Issue builders (error path only) --------------------------------------

    def shown(self, value: Any) -> str:
        return REDACTED if self.secret else _show_value(value)

    def issue(self, code: ParameterErrorCode, message: str) -> ParameterIssue:
        return ParameterIssue(self.name, code, message)

    def wrong_type(self, value: Any, problem: str = "") -> ParameterIssue:
        jtype = _json_type(value)
        got = f"{jtype} {self.shown(value)}" if jtype != "object" else "an object"
        example = "" if self.enum_list is not None else self.eg_text
        return self.issue(
            ParameterErrorCode.WRONG_TYPE,
            f"{self.name} must be {self.req_text}{example}; got {got}{problem}",
        )

    def check_enum(self, value: Any, errors: list[ParameterIssue]) -> bool:
        assert self.enum_list is not None
        if self.enum_set is not None:
            try:
                if value in self.enum_set:
                    return True
            except TypeError:  # unhashable value cannot be in a set of hashables
                pass
        elif value in self.enum_list:
            return True
        message = f"{self.name} must be {self._enum_phrase()}; got {self.shown(value)}"
        if not self.secret and isinstance(value, str):
            folded = value.casefold()
            for allowed in self.enum_list:
                if isinstance(allowed, str) and allowed.casefold() == folded:
                    message += f" (did you mean {allowed!r}? matching is case-sensitive)"
                    break
        errors.append(self.issue(ParameterErrorCode.NOT_IN_ENUM, message))
        return False

    def check_deps(self, get: Callable[[str], Any], errors: list[ParameterIssue]) -> None:
        for dep, message in self.deps:
            if dep is None or _not_provided(get(dep)):
                errors.append(self.issue(ParameterErrorCode.MISSING_DEPENDENCY, message))


class _StringRule(_Rule):
    __slots__ = (
        "length_text",
        "max_len",
        "max_len_declared",
        "min_len",
        "pattern",
        "pattern_problem",
        "too_long_text",
    )

    type_noun = "string"

    def __init__(self, spec: ParameterSpec) -> None:
        super().__init__(spec)
        self.min_len = spec.min_length or 0
        self.max_len_declared = spec.max_length
        self.max_len = MAX_STRING_LENGTH
        if spec.max_length is not None and spec.max_length < MAX_STRING_LENGTH:
            self.max_len = spec.max_length
        self.pattern: _Pattern | None = None
        self.pattern_problem = ""
        if spec.pattern is not None:
            compiled = _compile_pattern(spec.pattern)
            if isinstance(compiled, str):
                self.pattern_problem = compiled
            else:
                self.pattern = compiled
        self.length_text = self._length_phrase()
        # Without a declared maximum only the cap can be exceeded: say so, not "at least N".
        self.too_long_text = (
            self.length_text
            if self.max_len_declared is not None
            else f"at most {self.max_len} characters long"
        )

    def _length_phrase(self) -> str:
        if self.min_len and self.max_len_declared is not None:
            return f"from {self.min_len} to {self.max_len} characters long"
        if self.min_len:
            return f"at least {self.min_len} characters long"
        return f"at most {self.max_len} characters long"

    def _constraint(self) -> str:
        parts = []
        if self.min_len or self.max_len_declared is not None:
            parts.append(self.length_text)
        if self.pattern is not None:
            parts.append(f"matching {self.pattern.source}")
        return " and ".join(parts)

    def _candidate_examples(self, spec: ParameterSpec) -> list[Any]:
        if spec.pattern is not None:
            return []  # no generic string is likely to match a pattern
        size = min(max(len("example"), self.min_len), self.max_len)
        if size > _ECHO_CHARS:
            return []
        return [("example" + "x" * size)[:size]]

    def _format_example(self, value: Any) -> str:
        return _show_string(value)

    def check(self, value: Any, errors: list[ParameterIssue]) -> Any:
        if not isinstance(value, str):
            errors.append(self.wrong_type(value))
            return value
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                errors.append(self.wrong_type(value, " (it is not valid Unicode text)"))
                return value
        if self.enum_list is not None and not self.check_enum(value, errors):
            return value
        size = len(value)
        if size > self.max_len:
            errors.append(
                self._length_issue(ParameterErrorCode.TOO_LONG, self.too_long_text, value, size)
            )
            if size > MAX_STRING_LENGTH:
                return value  # too long to be worth matching
        elif size < self.min_len:
            errors.append(
                self._length_issue(ParameterErrorCode.TOO_SHORT, self.length_text, value, size)
            )
        if self.pattern is not None:
            if not self.pattern.search(value):
                errors.append(
                    self.issue(
                        ParameterErrorCode.PATTERN_MISMATCH,
                        f"{self.name} must match {self.pattern.source}{self.eg_text};"
                        f" got {self.shown(value)}",
                    )
                )
        elif self.pattern_problem:
            errors.append(
                self.issue(
                    ParameterErrorCode.PATTERN_MISMATCH,
                    f"{self.name} cannot be accepted: the workflow schema's pattern for it"
                    f" is unusable ({self.pattern_problem}); omit {self.name} if it is"
                    " optional, or choose another workflow",
                )
            )
        return value

    def _length_issue(
        self, code: ParameterErrorCode, limit: str, value: str, size: int
    ) -> ParameterIssue:
        return self.issue(
            code,
            f"{self.name} must be {limit}{self.eg_text};"
            f" got {self.shown(value)} ({size} character{'' if size == 1 else 's'})",
        )


class _NumberRule(_Rule):
    """Shared bounds handling of `integer` and `float`/`number`."""

    __slots__ = ("maximum", "minimum", "range_text")

    def __init__(self, spec: ParameterSpec) -> None:
        super().__init__(spec)
        self.minimum = spec.minimum
        self.maximum = spec.maximum
        self.range_text = self._range_phrase()

    def _range_phrase(self) -> str:
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f"from {_show_number(low)} to {_show_number(high)}"
        if low is not None:
            return f"at least {_show_number(low)}"
        if high is not None:
            return f"at most {_show_number(high)}"
        return ""

    def _constraint(self) -> str:
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return self.range_text
        if low is not None:
            return f">= {_show_number(low)}"
        if high is not None:
            return f"<= {_show_number(high)}"
        return ""

    def _candidate_examples(self, spec: ParameterSpec) -> list[Any]:
        low, high = self.minimum, self.maximum
        if any(b is not None and not math.isfinite(b) for b in (low, high)):
            return []
        guess: float = 1
        if low is not None and guess < low:
            guess = low
        if high is not None and guess > high:
            guess = high
        return [guess, math.ceil(guess), math.floor(guess)]

    def check_bounds(self, number: int | float, errors: list[ParameterIssue]) -> None:
        if self.minimum is not None and number < self.minimum:
            code = ParameterErrorCode.BELOW_MINIMUM
        elif self.maximum is not None and number > self.maximum:
            code = ParameterErrorCode.ABOVE_MAXIMUM
        else:
            return
        errors.append(
            self.issue(
                code,
                f"{self.name} must be {self.range_text}{self.eg_text}; got {self.shown(number)}",
            )
        )


class _IntegerRule(_NumberRule):
    __slots__ = ()

    article = "an"
    type_noun = "integer"

    def _normalise_enum(self, value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    def check(self, value: Any, errors: list[ParameterIssue]) -> Any:
        kind = type(value)
        if kind is int:
            number = value
        elif kind is float:
            if not value.is_integer():  # also false for NaN and infinities
                errors.append(self.wrong_type(value, " (a whole number is required)"))
                return value
            number = int(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = int(value)
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        else:
            errors.append(self.wrong_type(value))
            return value
        if self.enum_list is not None and not self.check_enum(number, errors):
            return number
        if self.minimum is not None or self.maximum is not None:
            before = len(errors)
            self.check_bounds(number, errors)
            if len(errors) > before:
                return number
        if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            errors.append(self._unsafe_integer(number))
        return number

    def _unsafe_integer(self, number: int) -> ParameterIssue:
        if number > 0:
            code, limit = ParameterErrorCode.ABOVE_MAXIMUM, f"at most {MAX_SAFE_INTEGER}"
        else:
            code, limit = ParameterErrorCode.BELOW_MINIMUM, f"at least {-MAX_SAFE_INTEGER}"
        return self.issue(
            code,
            f"{self.name} must be {limit} (larger whole numbers cannot be represented"
            f" exactly){self.eg_text}; got {self.shown(number)}",
        )


class _FloatRule(_NumberRule):
    __slots__ = ()

    type_noun = "number"

    def check(self, value: Any, errors: list[ParameterIssue]) -> Any:
        kind = type(value)
        if kind is float or isinstance(value, float):
            if not math.isfinite(value):
                errors.append(self.wrong_type(value, " (NaN and infinities are not allowed)"))
                return value
        elif not isinstance(value, int) or isinstance(value, bool):
            errors.append(self.wrong_type(value))
            return value
        elif not -_FLOAT_MAX <= value <= _FLOAT_MAX:
            errors.append(self.wrong_type(value, " (it is beyond the range of a finite number)"))
            return value
        if self.enum_list is not None and not self.check_enum(value, errors):
            return value
        if self.minimum is not None or self.maximum is not None:
            self.check_bounds(value, errors)
        return value


class _BooleanRule(_Rule):
    __slots__ = ()

    type_noun = "boolean"

    def _candidate_examples(self, spec: ParameterSpec) -> list[Any]:
        return [True, False]

    def check(self, value: Any, errors: list[ParameterIssue]) -> Any:
        if value is not True and value is not False:
            errors.append(self.wrong_type(value))
            return value
        if self.enum_list is not None:
            self.check_enum(value, errors)
        return value


class _ArrayRule(_Rule):
    __slots__ = ()

    article = "an"
    type_noun = "array"

    def _normalise_enum(self, value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value

    def _candidate_examples(self, spec: ParameterSpec) -> list[Any]:
        return [[]]

    def check(self, value: Any, errors: list[ParameterIssue]) -> Any:
        if not isinstance(value, list | tuple):
            errors.append(self.wrong_type(value))
            return value
        # A deep copy, so the caller mutating its input cannot change a verdict's output.
        items = copy.deepcopy(list(value))
        if self.enum_list is not None:
            self.check_enum(items, errors)
        return items


_RULE_TYPES: dict[str, type[_Rule]] = {
    "string": _StringRule,
    "integer": _IntegerRule,
    "float": _FloatRule,
    "number": _FloatRule,
    "boolean": _BooleanRule,
    "array": _ArrayRule,
}


class _CompiledSchema:
    """A schema turned into rules: the form that `validate_parameters` runs."""

    __slots__ = ("names", "rules")

    def __init__(self, specs: Sequence[ParameterSpec]) -> None:
        rules: dict[str, _Rule] = {}
        kept: list[ParameterSpec] = []
        for spec in specs:
            if not isinstance(spec, ParameterSpec):
                raise TypeError(f"schema entries must be ParameterSpec, not {type(spec).__name__}")
            if spec.name in rules:
                # The first declaration wins; a catalog should never repeat a name.
                logger.warning("Parameter %s is declared twice; the first one is used", spec.name)
                continue
            rule = _RULE_TYPES[spec.type](spec)
            rule.example = rule.pick_example(spec)
            rules[spec.name] = rule
            kept.append(spec)
        for spec in kept:
            rules[spec.name].finish(spec, rules)
        self.rules: tuple[_Rule, ...] = tuple(rules.values())
        self.names = frozenset(rules)

    def validate(self, parameters: Mapping[str, Any]) -> ValidationOutcome:
        errors: list[ParameterIssue] = []
        sanitized: dict[str, Any] = {}
        get = parameters.get
        declared_keys = 0
        for rule in self.rules:
            value = get(rule.name, _ABSENT)
            if value is not _ABSENT:
                declared_keys += 1
            if value is None or value is _ABSENT or (isinstance(value, str) and not value):
                if rule.required:
                    errors.append(rule.missing_issue)  # type: ignore[arg-type]
                continue
            before = len(errors)
            checked = rule.check(value, errors)
            if len(errors) == before:  # only values that passed their own checks are kept
                sanitized[rule.name] = checked
            if rule.deps:
                rule.check_deps(get, errors)
        stripped: tuple[str, ...] = ()
        if len(parameters) > declared_keys:
            names = self.names
            stripped = tuple(sorted(str(k) for k in parameters if k not in names))
        return ValidationOutcome(not errors, tuple(errors), sanitized, stripped)


_schema_cache: OrderedDict[Any, tuple[tuple[ParameterSpec, ...], _CompiledSchema]] = OrderedDict()
_schema_lock = threading.Lock()


def _compiled(schema: Sequence[ParameterSpec] | WorkflowSchema | Workflow) -> _CompiledSchema:
    """The compiled form of `schema`, from a bounded LRU cache.

    Catalog models are frozen, so a schema is keyed by the identity of its
    parameter tuple (or of each entry when a list is given). The cache holds a
    reference to the entries, so an identity cannot be reused while cached.
    """
    specs = schema.parameters if isinstance(schema, WorkflowSchema | Workflow) else schema
    if type(specs) is tuple:
        kept: tuple[ParameterSpec, ...] = specs
        key: Any = id(specs)
    else:
        kept = tuple(specs)
        key = tuple(map(id, kept))
    with _schema_lock:
        entry = _schema_cache.get(key)
        if entry is not None:
            _schema_cache.move_to_end(key)
            return entry[1]
    compiled = _CompiledSchema(kept)
    with _schema_lock:
        _schema_cache[key] = (kept, compiled)
        _schema_cache.move_to_end(key)
        while len(_schema_cache) > _SCHEMA_CACHE_SIZE:
            _schema_cache.popitem(last=False)
    return compiled
