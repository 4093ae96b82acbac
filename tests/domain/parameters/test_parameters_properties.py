"""Properties of `validate_parameters` over generated schemas and values."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hapi_grpc.domain.catalog import ParameterSpec
from hapi_grpc.domain.parameters import ParameterErrorCode, validate_parameters
from hapi_grpc.domain.toolsets.workflow_catalog.tools import render_validation

Code = ParameterErrorCode
SETTINGS = settings(
    max_examples=200,
    deadline=None,  # the first call per schema compiles it; timing is not under test
    suppress_health_check=[HealthCheck.too_slow],
)

# Declared names are UPPER_SNAKE_CASE; undeclared ones below never are.
NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True)
UNDECLARED_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)

# Patterns with a generator for matching values (generated without anchors so
# no trailing newline can sneak in) and a suffix that breaks the match.
PATTERNS = [
    (r"^[0-9]+(Ki|Mi|Gi|Ti)$", r"[0-9]{1,6}(Ki|Mi|Gi|Ti)", " "),
    (r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", "_"),
    (r"^v[0-9]+\.[0-9]+$", r"v[0-9]{1,3}\.[0-9]{1,3}", "!"),
]


@dataclass(frozen=True)
class Param:
    """A generated schema entry with a strategy for values that satisfy it."""

    spec: ParameterSpec
    values: st.SearchStrategy[Any]
    kind: str


@st.composite
def string_param(draw: st.DrawFn, name: str, required: bool) -> Param:
    low = draw(st.integers(0, 5))
    high = draw(st.integers(max(low, 1), 12))
    fields: dict[str, Any] = {"name": name, "type": "string", "required": required}
    if draw(st.booleans()):
        fields["min_length"] = low
    else:
        low = 0
    fields["max_length"] = high
    alphabet = st.sampled_from("aü😀-Z")  # multi-byte characters count once
    values = st.text(alphabet, min_size=max(low, 1), max_size=high)
    return Param(ParameterSpec.model_validate(fields), values, "string")


@st.composite
def pattern_param(draw: st.DrawFn, name: str, required: bool) -> Param:
    pattern, generator, _ = draw(st.sampled_from(PATTERNS))
    spec = ParameterSpec(name=name, type="string", required=required, pattern=pattern)
    return Param(spec, st.from_regex(generator, fullmatch=True), "pattern")


@st.composite
def integer_param(draw: st.DrawFn, name: str, required: bool) -> Param:
    low = draw(st.integers(-1000, 1000))
    high = draw(st.integers(low, low + 1000))
    spec = ParameterSpec(name=name, type="integer", required=required, minimum=low, maximum=high)
    ints = st.integers(low, high)
    # Protobuf Struct delivers whole numbers as floats.
    values = ints | ints.map(float)
    return Param(spec, values, "integer")


@st.composite
def float_param(draw: st.DrawFn, name: str, required: bool) -> Param:
    low = draw(st.floats(-1e6, 1e6))
    high = draw(st.floats(low, low + 1e6))
    spec_type = draw(st.sampled_from(["float", "number"]))
    spec = ParameterSpec(name=name, type=spec_type, required=required, minimum=low, maximum=high)
    values = st.floats(low, high)
    if math.ceil(low) <= math.floor(high):  # a float parameter also accepts integers
        values |= st.integers(math.ceil(low), math.floor(high))
    return Param(spec, values, "float")


@st.composite
def enum_param(draw: st.DrawFn, name: str, required: bool) -> Param:
    allowed = draw(
        st.lists(
            st.from_regex(r"[A-Z][a-z]{1,8}", fullmatch=True), min_size=1, max_size=5, unique=True
        )
    )
    spec = ParameterSpec(name=name, type="string", required=required, enum=tuple(allowed))
    return Param(spec, st.sampled_from(allowed), "enum")


def boolean_param(name: str, required: bool) -> st.SearchStrategy[Param]:
    spec = ParameterSpec(name=name, type="boolean", required=required)
    return st.just(Param(spec, st.booleans(), "boolean"))


def array_param(name: str, required: bool) -> st.SearchStrategy[Param]:
    spec = ParameterSpec(name=name, type="array", required=required)
    return st.just(
        Param(spec, st.lists(JSON_SCALARS.filter(lambda v: v == v), max_size=4), "array")
    )


KINDS = [
    string_param,
    pattern_param,
    integer_param,
    float_param,
    enum_param,
    boolean_param,
    array_param,
]


@st.composite
def schemas(draw: st.DrawFn) -> list[Param]:
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    params = []
    for name in names:
        kind = draw(st.sampled_from(KINDS))
        params.append(draw(kind(name, draw(st.booleans()))))
    return params


@st.composite
def valid_cases(draw: st.DrawFn) -> tuple[list[Param], dict[str, Any]]:
    """A schema and values satisfying it (optional parameters sometimes left out)."""
    params = draw(schemas())
    values: dict[str, Any] = {}
    for param in params:
        if param.spec.required or draw(st.booleans()):
            values[param.spec.name] = draw(param.values)
    return params, values


def specs(params: list[Param]) -> list[ParameterSpec]:
    return [p.spec for p in params]


def expected_sanitized(params: list[Param], values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for param in params:
        name = param.spec.name
        if name in values:
            value = values[name]
            out[name] = int(value) if param.kind == "integer" else value
    return out


@SETTINGS
@given(valid_cases())
def test_values_satisfying_the_schema_always_validate(
    case: tuple[list[Param], dict[str, Any]],
) -> None:
    params, values = case
    outcome = validate_parameters(specs(params), values)
    assert outcome.errors == ()
    assert outcome.valid
    assert outcome.stripped == ()
    assert outcome.sanitized == expected_sanitized(params, values)
    for param in params:
        if param.kind == "integer" and param.spec.name in values:
            assert type(outcome.sanitized[param.spec.name]) is int


def violations(param: Param, value: Any) -> list[tuple[Code, Any]]:
    """(expected code, replacement value) pairs that break exactly one rule of `param`.

    The sentinel DELETE removes the key instead of replacing the value.
    """
    spec = param.spec
    out: list[tuple[Code, Any]] = []
    if spec.required:
        out += [(Code.MISSING, DELETE), (Code.MISSING, None)]
        if spec.type == "string":
            out.append((Code.MISSING, ""))
    if param.kind == "string":
        out += [(Code.WRONG_TYPE, 7), (Code.TOO_LONG, "a" * (spec.max_length + 1))]
        if spec.min_length and spec.min_length >= 2:
            out.append((Code.TOO_SHORT, "a" * (spec.min_length - 1)))
    elif param.kind == "pattern":
        suffix = next(bad for p, _, bad in PATTERNS if p == spec.pattern)
        out += [(Code.WRONG_TYPE, True), (Code.PATTERN_MISMATCH, value + suffix)]
    elif param.kind == "integer":
        out += [
            (Code.WRONG_TYPE, str(int(value))),
            (Code.WRONG_TYPE, int(value) + 0.5),
            (Code.WRONG_TYPE, True),
            (Code.BELOW_MINIMUM, spec.minimum - 1),
            (Code.ABOVE_MAXIMUM, spec.maximum + 1),
        ]
    elif param.kind == "float":
        out += [
            (Code.WRONG_TYPE, "0.5"),
            (Code.WRONG_TYPE, False),
            (Code.WRONG_TYPE, math.nan),
            (Code.WRONG_TYPE, math.inf),
            (Code.BELOW_MINIMUM, spec.minimum - 1.0),
            (Code.ABOVE_MAXIMUM, spec.maximum + 1.0),
        ]
    elif param.kind == "enum":
        out += [
            (Code.NOT_IN_ENUM, value.lower()),
            (Code.NOT_IN_ENUM, "Zz_not_allowed"),
            (Code.WRONG_TYPE, 1),
        ]
    elif param.kind == "boolean":
        out += [(Code.WRONG_TYPE, 1), (Code.WRONG_TYPE, "true")]
    elif param.kind == "array":
        out += [(Code.WRONG_TYPE, "a,b"), (Code.WRONG_TYPE, {"a": 1})]
    return out


DELETE = object()


@SETTINGS
@given(valid_cases(), st.data())
def test_breaking_one_rule_gives_exactly_that_error(
    case: tuple[list[Param], dict[str, Any]], data: st.DataObject
) -> None:
    params, values = case
    target = data.draw(st.sampled_from(params))
    name = target.spec.name
    if name not in values:
        values[name] = data.draw(target.values)
    code, replacement = data.draw(st.sampled_from(violations(target, values[name])))
    if replacement is DELETE:
        del values[name]
    else:
        values[name] = replacement

    outcome = validate_parameters(specs(params), values)

    assert not outcome.valid
    assert [(e.parameter, e.code) for e in outcome.errors] == [(name, code)]
    assert name in outcome.errors[0].message
    assert render_validation(outcome)["status"] == "invalid"


@SETTINGS
@given(
    valid_cases(),
    st.dictionaries(UNDECLARED_NAMES, JSON_SCALARS, max_size=6),
    st.randoms(use_true_random=False),
)
def test_undeclared_parameters_are_stripped_exactly(
    case: tuple[list[Param], dict[str, Any]], extra: dict[str, Any], rng: Any
) -> None:
    params, values = case
    declared = {p.spec.name for p in params}
    proposed = {**values, **extra}
    items = list(proposed.items())
    rng.shuffle(items)  # the input order must not matter

    outcome = validate_parameters(specs(params), dict(items))

    assert set(outcome.sanitized) <= declared
    assert outcome.stripped == tuple(sorted(extra))
    assert outcome.valid
    assert outcome.sanitized == expected_sanitized(params, values)
    assert list(outcome.sanitized) == [p.spec.name for p in params if p.spec.name in values]
