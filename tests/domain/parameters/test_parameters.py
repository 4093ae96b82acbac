"""Workflow parameter validation (BR-HAPI-191): seed use cases, every rule, every type."""

from __future__ import annotations

import json
import logging
import math
import time
from typing import Any

import pytest

from hapi_grpc.domain.catalog import ParameterSpec, Workflow, WorkflowSchema
from hapi_grpc.domain.parameters import (
    MAX_PATTERN_LENGTH,
    ParameterErrorCode,
    ParameterIssue,
    ValidationOutcome,
    validate_parameters,
)
from hapi_grpc.domain.parameters import schema as params_module
from hapi_grpc.domain.parameters.limits import MAX_SAFE_INTEGER, MAX_STRING_LENGTH
from hapi_grpc.domain.sensitive import REDACTED, is_secret_name
from hapi_grpc.domain.toolsets.workflow_catalog.tools import render_validation

Code = ParameterErrorCode
LOGGER = "hapi_grpc.domain.parameters"
ABSENT = object()  # marks "key not in the proposed parameters"


def spec(name: str = "P", **fields: Any) -> ParameterSpec:
    return ParameterSpec.model_validate({"name": name, **fields})


def codes(outcome: ValidationOutcome) -> list[tuple[str, Code]]:
    return [(e.parameter, e.code) for e in outcome.errors]


# --- seed use cases (BR-HAPI-191) -------------------------------------------

OOMKILL = WorkflowSchema(
    workflow_id="oomkill-increase-memory-v1",
    version="1.0.0",
    parameters=(
        spec(
            "MEMORY_LIMIT",
            required=True,
            pattern=r"^[0-9]+(Ki|Mi|Gi|Ti)$",
            default="512Mi",
            description="New memory limit in Kubernetes quantity format",
        ),
        spec("NAMESPACE", required=False, default="production"),
    ),
)


def test_use_case_1_invalid_memory_limit_then_self_corrected() -> None:
    first = validate_parameters(OOMKILL, {"MEMORY_LIMIT": "2 gigabytes"})
    assert not first.valid
    assert codes(first) == [("MEMORY_LIMIT", Code.PATTERN_MISMATCH)]
    assert first.errors[0].message == (
        "MEMORY_LIMIT must match ^[0-9]+(Ki|Mi|Gi|Ti)$ (e.g. '512Mi'); got '2 gigabytes'"
    )
    assert render_validation(first)["status"] == "invalid"

    second = validate_parameters(OOMKILL, {"MEMORY_LIMIT": "2Gi"})
    assert second.valid
    assert render_validation(second) == {"status": "valid"}
    assert second.sanitized == {"MEMORY_LIMIT": "2Gi"}


def test_acceptance_valid_parameters_pass_first_time() -> None:
    outcome = validate_parameters(OOMKILL, {"MEMORY_LIMIT": "2Gi", "NAMESPACE": "production"})
    assert outcome.valid
    assert outcome.errors == ()
    assert outcome.sanitized == {"MEMORY_LIMIT": "2Gi", "NAMESPACE": "production"}


def test_use_case_2_missing_required_namespace() -> None:
    schema = [
        spec("NAMESPACE", required=True, default="production"),
        spec("TARGET_NAME", required=True),
    ]
    outcome = validate_parameters(schema, {"TARGET_NAME": "api-server"})
    assert codes(outcome) == [("NAMESPACE", Code.MISSING)]
    assert outcome.errors[0].message == (
        "Missing required parameter: NAMESPACE (string, e.g. 'production')"
    )
    fixed = validate_parameters(schema, {"NAMESPACE": "production", "TARGET_NAME": "api-server"})
    assert fixed.valid


def test_use_case_3_enum_is_case_sensitive() -> None:
    schema = [spec("RESTART_POLICY", enum=["Always", "OnFailure", "Never"])]
    wrong = validate_parameters(schema, {"RESTART_POLICY": "always"})
    assert codes(wrong) == [("RESTART_POLICY", Code.NOT_IN_ENUM)]
    assert wrong.errors[0].message.startswith(
        "RESTART_POLICY must be one of [Always, OnFailure, Never]; got 'always'"
    )
    assert "did you mean 'Always'" in wrong.errors[0].message
    assert validate_parameters(schema, {"RESTART_POLICY": "Always"}).valid


def test_use_case_4_hallucinated_credentials_are_stripped_and_logged_by_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = WorkflowSchema(
        workflow_id="fix-certificate-gitops-v1",
        parameters=(
            spec("TARGET_NAMESPACE", required=True),
            spec("TARGET_RESOURCE_NAME", required=True),
        ),
    )
    proposed = {
        "TARGET_NAMESPACE": "demo-cert-gitops",
        "TARGET_RESOURCE_NAME": "demo-app-cert",
        "GIT_PASSWORD": "kubernaut-token",
        "GIT_USERNAME": "kubernaut",
    }
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outcome = validate_parameters(schema, proposed, workflow_id="fix-certificate-gitops-v1")

    assert outcome.valid
    assert outcome.sanitized == {
        "TARGET_NAMESPACE": "demo-cert-gitops",
        "TARGET_RESOURCE_NAME": "demo-app-cert",
    }
    assert outcome.stripped == ("GIT_PASSWORD", "GIT_USERNAME")
    assert render_validation(outcome) == {
        "status": "valid",
        "stripped_parameters": ["GIT_PASSWORD", "GIT_USERNAME"],
    }
    records = [r for r in caplog.records if r.name == LOGGER]
    assert len(records) == 1
    record = records[0]
    assert record.levelno == logging.WARNING
    text = record.getMessage()
    assert "GIT_PASSWORD" in text and "GIT_USERNAME" in text
    assert "fix-certificate-gitops-v1" in text
    assert "Stripped 2 undeclared" in text
    everything_logged = text + repr(record.__dict__)
    assert "kubernaut" not in everything_logged


def test_acceptance_undeclared_secret_is_stripped(caplog: pytest.LogCaptureFixture) -> None:
    schema = [spec("TARGET_NAMESPACE")]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outcome = validate_parameters(
            schema, {"TARGET_NAMESPACE": "prod", "GIT_PASSWORD": "secret"}, workflow_id="wf-1"
        )
    assert outcome.valid
    assert outcome.sanitized == {"TARGET_NAMESPACE": "prod"}
    assert "GIT_PASSWORD" in caplog.text
    assert "secret" not in caplog.text.replace("GIT_PASSWORD", "")


@pytest.mark.parametrize(
    "schema",
    [
        WorkflowSchema(workflow_id="no-params-v1"),
        WorkflowSchema.model_validate({"workflow_id": "no-params-v1", "parameters": None}),
        [],
        (),
    ],
    ids=["absent", "null", "empty-list", "empty-tuple"],
)
def test_use_case_5_schema_without_parameters_strips_everything(
    schema: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outcome = validate_parameters(schema, {"SOME_PARAM": "value"}, workflow_id="no-params-v1")
    assert outcome.valid
    assert outcome.sanitized == {}
    assert outcome.stripped == ("SOME_PARAM",)
    assert "SOME_PARAM" in caplog.text
    assert "value" not in caplog.text


# --- one rule per row -------------------------------------------------------

K8S_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NEXT_BELOW_01 = math.nextafter(0.1, 0.0)
NEXT_ABOVE_09 = math.nextafter(0.9, 1.0)

# (id, schema fields of parameter P, proposed value or ABSENT, expected codes, sanitized value)
# A sanitized value of ABSENT means "P is not in the sanitized output": a value
# that fails its own checks is never passed on.
CASES: list[tuple[str, dict[str, Any], Any, list[Code], Any]] = [
    # presence
    ("required-absent", {"required": True}, ABSENT, [Code.MISSING], ABSENT),
    ("required-null", {"required": True}, None, [Code.MISSING], ABSENT),
    ("required-empty-string", {"required": True}, "", [Code.MISSING], ABSENT),
    ("required-integer-null", {"type": "integer", "required": True}, None, [Code.MISSING], ABSENT),
    ("required-whitespace-is-a-value", {"required": True}, " ", [], " "),
    ("required-false-is-a-value", {"type": "boolean", "required": True}, False, [], False),
    ("required-zero-is-a-value", {"type": "integer", "required": True}, 0, [], 0),
    ("required-empty-array-is-a-value", {"type": "array", "required": True}, [], [], []),
    ("optional-absent", {}, ABSENT, [], ABSENT),
    ("optional-null-dropped", {}, None, [], ABSENT),
    ("optional-empty-string-dropped", {"min_length": 3}, "", [], ABSENT),
    ("optional-integer-null-dropped", {"type": "integer"}, None, [], ABSENT),
    # string
    ("string-ok", {"type": "string"}, "api-server", [], "api-server"),
    ("string-int", {"type": "string"}, 3, [Code.WRONG_TYPE], ABSENT),
    ("string-bool", {"type": "string"}, True, [Code.WRONG_TYPE], ABSENT),
    ("string-list", {"type": "string"}, ["a"], [Code.WRONG_TYPE], ABSENT),
    ("string-object", {"type": "string"}, {"a": 1}, [Code.WRONG_TYPE], ABSENT),
    ("string-lone-surrogate", {"type": "string"}, "ab\ud800", [Code.WRONG_TYPE], ABSENT),
    # integer
    ("integer-ok", {"type": "integer"}, 3, [], 3),
    ("integer-float-whole", {"type": "integer"}, 3.0, [], 3),
    ("integer-negative-zero", {"type": "integer"}, -0.0, [], 0),
    ("integer-max-safe", {"type": "integer"}, MAX_SAFE_INTEGER, [], MAX_SAFE_INTEGER),
    ("integer-min-safe", {"type": "integer"}, -MAX_SAFE_INTEGER, [], -MAX_SAFE_INTEGER),
    ("integer-max-safe-float", {"type": "integer"}, float(2**53 - 1), [], MAX_SAFE_INTEGER),
    ("integer-unsafe", {"type": "integer"}, 2**53, [Code.ABOVE_MAXIMUM], ABSENT),
    ("integer-unsafe-negative", {"type": "integer"}, -(2**70), [Code.BELOW_MINIMUM], ABSENT),
    ("integer-unsafe-float", {"type": "integer"}, 1e20, [Code.ABOVE_MAXIMUM], ABSENT),
    ("float-huge-int", {"type": "float"}, 10**400, [Code.WRONG_TYPE], ABSENT),
    ("float-big-int-in-range", {"type": "float"}, 10**20, [], 10**20),
    ("integer-string", {"type": "integer"}, "3", [Code.WRONG_TYPE], ABSENT),
    ("integer-fraction", {"type": "integer"}, 3.5, [Code.WRONG_TYPE], ABSENT),
    ("integer-true", {"type": "integer"}, True, [Code.WRONG_TYPE], ABSENT),
    ("integer-false", {"type": "integer"}, False, [Code.WRONG_TYPE], ABSENT),
    ("integer-nan", {"type": "integer"}, math.nan, [Code.WRONG_TYPE], ABSENT),
    ("integer-inf", {"type": "integer"}, math.inf, [Code.WRONG_TYPE], ABSENT),
    ("integer-list", {"type": "integer"}, [3], [Code.WRONG_TYPE], ABSENT),
    ("integer-at-minimum", {"type": "integer", "minimum": 1, "maximum": 10}, 1, [], 1),
    ("integer-at-maximum", {"type": "integer", "minimum": 1, "maximum": 10}, 10, [], 10),
    ("integer-at-max-as-float", {"type": "integer", "minimum": 1, "maximum": 10}, 10.0, [], 10),
    (
        "integer-below",
        {"type": "integer", "minimum": 1, "maximum": 10},
        0,
        [Code.BELOW_MINIMUM],
        ABSENT,
    ),
    (
        "integer-above",
        {"type": "integer", "minimum": 1, "maximum": 10},
        11,
        [Code.ABOVE_MAXIMUM],
        ABSENT,
    ),
    (
        "integer-below-as-float",
        {"type": "integer", "minimum": 1},
        0.0,
        [Code.BELOW_MINIMUM],
        ABSENT,
    ),
    # float / number
    ("float-ok", {"type": "float"}, 0.5, [], 0.5),
    ("float-accepts-int", {"type": "float"}, 3, [], 3),
    ("number-alias", {"type": "number"}, 2.5, [], 2.5),
    ("float-true", {"type": "float"}, True, [Code.WRONG_TYPE], ABSENT),
    ("float-string", {"type": "float"}, "0.5", [Code.WRONG_TYPE], ABSENT),
    ("float-nan", {"type": "float"}, math.nan, [Code.WRONG_TYPE], ABSENT),
    ("float-inf", {"type": "float"}, math.inf, [Code.WRONG_TYPE], ABSENT),
    ("float-minus-inf", {"type": "number"}, -math.inf, [Code.WRONG_TYPE], ABSENT),
    ("float-at-minimum", {"type": "float", "minimum": 0.1, "maximum": 0.9}, 0.1, [], 0.1),
    ("float-at-maximum", {"type": "float", "minimum": 0.1, "maximum": 0.9}, 0.9, [], 0.9),
    (
        "float-just-below",
        {"type": "float", "minimum": 0.1, "maximum": 0.9},
        NEXT_BELOW_01,
        [Code.BELOW_MINIMUM],
        ABSENT,
    ),
    (
        "float-just-above",
        {"type": "float", "minimum": 0.1, "maximum": 0.9},
        NEXT_ABOVE_09,
        [Code.ABOVE_MAXIMUM],
        ABSENT,
    ),
    ("float-int-bounds", {"type": "float", "minimum": 0, "maximum": 1}, 1, [], 1),
    # boolean
    ("boolean-true", {"type": "boolean"}, True, [], True),
    ("boolean-false", {"type": "boolean"}, False, [], False),
    ("boolean-one", {"type": "boolean"}, 1, [Code.WRONG_TYPE], ABSENT),
    ("boolean-zero", {"type": "boolean"}, 0, [Code.WRONG_TYPE], ABSENT),
    ("boolean-string-true", {"type": "boolean"}, "true", [Code.WRONG_TYPE], ABSENT),
    ("boolean-string-false", {"type": "boolean"}, "false", [Code.WRONG_TYPE], ABSENT),
    # array
    ("array-empty", {"type": "array"}, [], [], []),
    ("array-mixed-items", {"type": "array"}, ["a", 1, None], [], ["a", 1, None]),
    ("array-tuple", {"type": "array"}, ("a", "b"), [], ["a", "b"]),
    ("array-string", {"type": "array"}, "a,b", [Code.WRONG_TYPE], ABSENT),
    ("array-object", {"type": "array"}, {"a": 1}, [Code.WRONG_TYPE], ABSENT),
    # enum
    ("enum-ok", {"enum": ["Always", "OnFailure", "Never"]}, "Never", [], "Never"),
    ("enum-case", {"enum": ["Always", "OnFailure", "Never"]}, "never", [Code.NOT_IN_ENUM], ABSENT),
    ("enum-other", {"enum": ["Always", "OnFailure"]}, "Sometimes", [Code.NOT_IN_ENUM], ABSENT),
    ("enum-type-first", {"enum": ["Always"]}, 1, [Code.WRONG_TYPE], ABSENT),
    ("enum-integer-ok", {"type": "integer", "enum": [1, 2, 3]}, 2, [], 2),
    ("enum-integer-float", {"type": "integer", "enum": [1, 2, 3]}, 2.0, [], 2),
    ("enum-integer-miss", {"type": "integer", "enum": [1, 2, 3]}, 4, [Code.NOT_IN_ENUM], ABSENT),
    ("enum-integer-bool", {"type": "integer", "enum": [0, 1]}, True, [Code.WRONG_TYPE], ABSENT),
    ("enum-array-ok", {"type": "array", "enum": [["a"], ["b"]]}, ["b"], [], ["b"]),
    ("enum-array-miss", {"type": "array", "enum": [["a"]]}, ["c"], [Code.NOT_IN_ENUM], ABSENT),
    # length, in Unicode code points
    ("length-umlaut-at-max", {"max_length": 5}, "ü" * 5, [], "ü" * 5),
    ("length-umlaut-over", {"max_length": 5}, "ü" * 6, [Code.TOO_LONG], ABSENT),
    ("length-emoji-at-max", {"max_length": 5}, "😀" * 5, [], "😀" * 5),
    ("length-emoji-over", {"max_length": 5}, "😀" * 6, [Code.TOO_LONG], ABSENT),
    ("length-combining-counts-two", {"max_length": 1}, "e\u0301", [Code.TOO_LONG], ABSENT),
    ("length-too-short", {"min_length": 2}, "é", [Code.TOO_SHORT], ABSENT),
    ("length-at-min", {"min_length": 2}, "éé", [], "éé"),
    ("length-ignored-for-integer", {"type": "integer", "max_length": 1}, 12345, [], 12345),
    ("bounds-ignored-for-string", {"minimum": 5}, "1", [], "1"),
    # string cap
    ("cap-at-limit", {}, "a" * MAX_STRING_LENGTH, [], "a" * MAX_STRING_LENGTH),
    ("cap-over", {}, "a" * (MAX_STRING_LENGTH + 1), [Code.TOO_LONG], ABSENT),
    (
        "cap-wins-over-larger-max-length",
        {"max_length": 10 * MAX_STRING_LENGTH},
        "a" * (MAX_STRING_LENGTH + 1),
        [Code.TOO_LONG],
        ABSENT,
    ),
    (
        "cap-over-skips-pattern",
        {"pattern": "^[0-9]+$"},
        "x" * (MAX_STRING_LENGTH + 1),
        [Code.TOO_LONG],
        ABSENT,
    ),
    # pattern: JSON Schema search semantics on RE2
    ("pattern-ok", {"pattern": K8S_NAME}, "api-server", [], "api-server"),
    ("pattern-miss", {"pattern": K8S_NAME}, "API_Server", [Code.PATTERN_MISMATCH], ABSENT),
    ("pattern-unanchored-search", {"pattern": "[0-9]+"}, "abc123", [], "abc123"),
    ("pattern-anchored", {"pattern": "^[0-9]+$"}, "abc123", [Code.PATTERN_MISMATCH], ABSENT),
    (
        "pattern-no-trailing-newline",
        {"pattern": "^[0-9]+$"},
        "12\n",
        [Code.PATTERN_MISMATCH],
        ABSENT,
    ),
    ("pattern-unicode", {"pattern": "^ü{2}$"}, "üü", [], "üü"),
    ("pattern-ignored-for-integer", {"type": "integer", "pattern": "^x$"}, 3, [], 3),
    (
        "pattern-and-length-both-reported",
        {"pattern": "^[0-9]+$", "max_length": 3},
        "abcd",
        [Code.TOO_LONG, Code.PATTERN_MISMATCH],
        ABSENT,
    ),
    ("pattern-invalid", {"pattern": "(a"}, "a", [Code.PATTERN_MISMATCH], ABSENT),
    (
        "pattern-lookbehind-unsupported",
        {"pattern": "(?<=a)b"},
        "ab",
        [Code.PATTERN_MISMATCH],
        ABSENT,
    ),
    (
        "pattern-backreference-unsupported",
        {"pattern": r"(a)\1"},
        "aa",
        [Code.PATTERN_MISMATCH],
        ABSENT,
    ),
    (
        "pattern-too-long",
        {"pattern": "a" * (MAX_PATTERN_LENGTH + 1)},
        "a" * (MAX_PATTERN_LENGTH + 1),
        [Code.PATTERN_MISMATCH],
        ABSENT,
    ),
    ("pattern-invalid-optional-absent", {"pattern": "(a"}, ABSENT, [], ABSENT),
]


@pytest.mark.parametrize(
    ("fields", "value", "expected", "sanitized"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_rule_table(
    fields: dict[str, Any], value: Any, expected: list[Code], sanitized: Any
) -> None:
    proposed = {} if value is ABSENT else {"P": value}
    outcome = validate_parameters([spec("P", **fields)], proposed)

    assert [e.code for e in outcome.errors] == expected
    assert all(e.parameter == "P" for e in outcome.errors)
    assert all("P" in e.message for e in outcome.errors)
    assert outcome.valid is (not expected)
    assert outcome.stripped == ()
    if sanitized is ABSENT:
        assert "P" not in outcome.sanitized
    else:
        assert outcome.sanitized == {"P": sanitized}
        assert type(outcome.sanitized["P"]) is type(sanitized)


@pytest.mark.parametrize("value", [3.0, 3, -0.0, 1e3])
def test_integer_is_normalised_to_int(value: float) -> None:
    outcome = validate_parameters([spec("REPLICA_COUNT", type="integer")], {"REPLICA_COUNT": value})
    assert outcome.valid
    assert type(outcome.sanitized["REPLICA_COUNT"]) is int
    assert outcome.sanitized["REPLICA_COUNT"] == value


@pytest.mark.parametrize("pattern", ["(a+)+$", "^(a|a)*$", "^(a*)*b$"])
def test_pathological_patterns_finish(pattern: str) -> None:
    schema = [spec("P", pattern=pattern)]
    start = time.perf_counter()
    over_cap = validate_parameters(schema, {"P": "a" * 5000 + "!"})
    under_cap = validate_parameters(schema, {"P": "a" * 4000 + "!"})
    elapsed = time.perf_counter() - start
    # Over the cap: rejected before any matching, with the cap in the message.
    assert codes(over_cap) == [("P", Code.TOO_LONG)]
    assert f"at most {MAX_STRING_LENGTH} characters" in over_cap.errors[0].message
    # Under the cap: matched by RE2 (a backtracking engine would never return).
    assert codes(under_cap) == [("P", Code.PATTERN_MISMATCH)]
    assert elapsed < 10.0  # generous sanity bound, not a benchmark


def test_pathological_pattern_still_matches_valid_input() -> None:
    assert validate_parameters([spec("P", pattern="^(a+)+$")], {"P": "a" * 4000}).valid


def test_invalid_pattern_message_blames_the_schema() -> None:
    outcome = validate_parameters([spec("P", pattern="(a")], {"P": "a"})
    message = outcome.errors[0].message
    assert "pattern" in message and "unusable" in message and "another workflow" in message


# --- depends_on -------------------------------------------------------------

DEPS = [
    spec("SCALE_TARGET", depends_on=["REPLICA_COUNT"]),
    spec("REPLICA_COUNT", type="integer", minimum=1, maximum=10),
]


@pytest.mark.parametrize(
    ("proposed", "expected"),
    [
        ({"SCALE_TARGET": "web"}, [("SCALE_TARGET", Code.MISSING_DEPENDENCY)]),
        (
            {"SCALE_TARGET": "web", "REPLICA_COUNT": None},
            [("SCALE_TARGET", Code.MISSING_DEPENDENCY)],
        ),
        ({"SCALE_TARGET": "web", "REPLICA_COUNT": 3}, []),
        ({"REPLICA_COUNT": 3}, []),
        ({}, []),
        # A present but invalid dependency reports its own error only.
        ({"SCALE_TARGET": "web", "REPLICA_COUNT": 0}, [("REPLICA_COUNT", Code.BELOW_MINIMUM)]),
    ],
)
def test_depends_on(proposed: dict[str, Any], expected: list[tuple[str, Code]]) -> None:
    assert codes(validate_parameters(DEPS, proposed)) == expected


def test_missing_dependency_message_names_the_dependency() -> None:
    message = validate_parameters(DEPS, {"SCALE_TARGET": "web"}).errors[0].message
    assert message == (
        "SCALE_TARGET requires REPLICA_COUNT to be set as well (integer from 1 to 10, e.g. 1);"
        " provide REPLICA_COUNT or omit SCALE_TARGET"
    )


def test_dependency_on_required_parameter_reports_only_missing() -> None:
    schema = [spec("A", depends_on=["R"]), spec("R", required=True)]
    assert codes(validate_parameters(schema, {"A": "x"})) == [("R", Code.MISSING)]


def test_dependency_on_undeclared_parameter_cannot_be_satisfied() -> None:
    schema = [spec("A", depends_on=["UNDECLARED"])]
    outcome = validate_parameters(schema, {"A": "x", "UNDECLARED": "y"})
    assert codes(outcome) == [("A", Code.MISSING_DEPENDENCY)]
    assert "does not declare" in outcome.errors[0].message
    assert outcome.stripped == ("UNDECLARED",)


def test_self_dependency_is_ignored() -> None:
    assert validate_parameters([spec("A", depends_on=["A"])], {"A": "x"}).valid


# --- messages ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "value", "fragments"),
    [
        (
            {"type": "integer", "minimum": 1, "maximum": 10},
            "3",
            ["an integer from 1 to 10", "(e.g. 1)", "got string '3'"],
        ),
        ({"type": "integer", "minimum": 5}, 2, ["at least 5", "(e.g. 5)", "got 2"]),
        ({"type": "integer", "maximum": -5}, 2, ["at most -5", "(e.g. -5)", "got 2"]),
        (
            {"type": "float", "minimum": 0.5, "maximum": 0.75},
            1.5,
            ["from 0.5 to 0.75", "(e.g. 0.75)", "got 1.5"],
        ),
        ({"type": "integer", "default": 3}, 3.5, ["an integer", "(e.g. 3)", "got number 3.5"]),
        ({"type": "boolean"}, "yes", ["a boolean", "(e.g. true)", "got string 'yes'"]),
        ({"type": "array"}, 5, ["an array", "got integer 5"]),
        ({"type": "float"}, math.nan, ["a number", "got number NaN"]),
        ({"enum": ["Always", "Never"]}, 7, ["a string, one of [Always, Never]", "got integer 7"]),
        (
            {"max_length": 3, "default": "abc"},
            "abcd",
            ["at most 3 characters long", "(e.g. 'abc')", "(4 characters)"],
        ),
        ({"min_length": 2}, "a" * 5000, ["at most 4096 characters long", "(5000 characters)"]),
        (
            {"min_length": 2, "max_length": 4},
            "a",
            ["from 2 to 4 characters long", "got 'a' (1 character)"],
        ),
        ({"pattern": "^[0-9]+$", "default": "abc"}, "x", ["must match ^[0-9]+$; got 'x'"]),
    ],
)
def test_message_says_what_is_allowed_with_an_example(
    fields: dict[str, Any], value: Any, fragments: list[str]
) -> None:
    outcome = validate_parameters([spec("PARAM_X", **fields)], {"PARAM_X": value})
    assert len(outcome.errors) == 1
    message = outcome.errors[0].message
    assert message.startswith("PARAM_X must ")
    for fragment in fragments:
        assert fragment in message


def test_example_prefers_default_then_first_enum_value() -> None:
    schema = [
        spec("WITH_DEFAULT", required=True, enum=["A", "B"], default="B"),
        spec("ENUM_ONLY", required=True, enum=["X", "Y"]),
        spec("PLAIN", required=True, type="integer", default=4),
    ]
    messages = [e.message for e in validate_parameters(schema, {}).errors]
    assert messages == [
        "Missing required parameter: WITH_DEFAULT (string, one of [A, B])",
        "Missing required parameter: ENUM_ONLY (string, one of [X, Y])",
        "Missing required parameter: PLAIN (integer, e.g. 4)",
    ]
    wrong = validate_parameters(schema[1:2], {"ENUM_ONLY": 1}).errors[0].message
    assert "one of [X, Y]" in wrong


def test_missing_message_includes_description() -> None:
    schema = [spec("NAMESPACE", required=True, description="Target\nnamespace " + "x" * 300)]
    message = validate_parameters(schema, {}).errors[0].message
    assert message.startswith("Missing required parameter: NAMESPACE (string")
    assert "— Target namespace" in message
    assert "\n" not in message
    assert len(message) < 250


def test_default_that_breaks_its_own_rules_is_not_offered_as_example() -> None:
    schema = [spec("MEM", pattern="^[0-9]+Mi$", default="lots")]
    message = validate_parameters(schema, {"MEM": "x"}).errors[0].message
    assert "lots" not in message
    assert message == "MEM must match ^[0-9]+Mi$; got 'x'"


def test_echoed_value_is_truncated_and_escaped() -> None:
    value = "line1\nline2 " + "z" * 200
    message = validate_parameters([spec("P", pattern="^x$")], {"P": value}).errors[0].message
    assert "\n" not in message
    assert "\\n" in message
    assert message.endswith("…")
    assert "z" * 40 not in message  # 40-character prefix includes "line1\nline2 "
    assert len(message) < 120


def test_echoed_array_is_truncated() -> None:
    message = validate_parameters([spec("P")], {"P": list(range(1000))}).errors[0].message
    assert message.endswith("got array [0, 1, 2, 3, 4, 5, 6, 7, …]")
    long_items = validate_parameters([spec("P")], {"P": ["x" * 100]}).errors[0].message
    assert long_items.endswith("…")
    assert "x" * 41 not in long_items


def test_huge_integer_is_described_not_printed() -> None:
    value = 10**5000
    bounded = validate_parameters([spec("P", type="integer", maximum=10)], {"P": value})
    assert codes(bounded) == [("P", Code.ABOVE_MAXIMUM)]
    assert bounded.errors[0].message == (
        "P must be at most 10 (e.g. 1); got an integer of about 5001 digits"
    )
    unbounded = validate_parameters([spec("P", type="integer")], {"P": value})
    assert codes(unbounded) == [("P", Code.ABOVE_MAXIMUM)]
    assert f"at most {MAX_SAFE_INTEGER}" in unbounded.errors[0].message
    assert len(unbounded.errors[0].message) < 160


SECRET_VALUE = "hunter2-Sup3rSecret"


@pytest.mark.parametrize(
    ("name", "fields", "value"),
    [
        ("GIT_PASSWORD", {"pattern": "^x$"}, SECRET_VALUE),
        ("API_TOKEN", {"type": "integer"}, SECRET_VALUE),
        ("CLIENT_SECRET", {"enum": [SECRET_VALUE.upper()]}, SECRET_VALUE),
        ("SSH_PRIVATE_KEY", {"max_length": 3}, SECRET_VALUE),
        ("db_credentials", {"min_length": 100}, SECRET_VALUE),
        ("AuthHeader", {"type": "boolean"}, SECRET_VALUE),
    ],
)
def test_secret_looking_values_are_never_echoed(
    name: str, fields: dict[str, Any], value: Any
) -> None:
    outcome = validate_parameters([spec(name, **fields)], {name: value})
    assert len(outcome.errors) == 1
    message = outcome.errors[0].message
    assert REDACTED in message
    assert SECRET_VALUE not in message
    assert SECRET_VALUE.upper() not in message.replace(f"[{SECRET_VALUE.upper()}]", "")
    assert "did you mean" not in message
    assert SECRET_VALUE not in json.dumps(render_validation(outcome))


def test_secret_parameter_default_is_not_shown_as_example() -> None:
    schema = [spec("API_KEY", required=True, default="sk-live-123")]
    assert "sk-live-123" not in validate_parameters(schema, {}).errors[0].message


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GIT_PASSWORD", True),
        ("api_token", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("REGISTRY_CREDENTIAL", True),
        ("apiKey", True),
        ("DB_PASSWD", True),
        ("NAMESPACE", False),
        ("MEMORY_LIMIT_NEW", False),
        ("REPLICA_COUNT", False),
    ],
)
def test_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


# --- outcome, ordering, schema forms ----------------------------------------


def test_errors_follow_schema_order_not_input_order() -> None:
    schema = [
        spec("B_FIRST", type="integer"),
        spec("A_SECOND", required=True),
        spec("C_THIRD", type="boolean"),
    ]
    outcome = validate_parameters(schema, {"C_THIRD": 1, "B_FIRST": "x", "ZZ": 1, "AA": 2})
    assert codes(outcome) == [
        ("B_FIRST", Code.WRONG_TYPE),
        ("A_SECOND", Code.MISSING),
        ("C_THIRD", Code.WRONG_TYPE),
    ]
    assert outcome.stripped == ("AA", "ZZ")


def test_sanitized_follows_schema_order() -> None:
    schema = [spec("B"), spec("A")]
    outcome = validate_parameters(schema, {"A": "1", "B": "2"})
    assert list(outcome.sanitized) == ["B", "A"]


def test_sanitized_is_a_fresh_dict_and_arrays_are_copied() -> None:
    schema = [spec("NODES", type="array"), spec("NAME")]
    nodes = ["a", {"zone": "x"}]
    first = validate_parameters(schema, {"NODES": nodes, "NAME": "n"})
    first.sanitized["NAME"] = "changed"
    nodes[1]["zone"] = "y"
    second = validate_parameters(schema, {"NODES": nodes, "NAME": "n"})
    assert second.sanitized["NAME"] == "n"
    assert first.sanitized["NODES"] == ["a", {"zone": "x"}]
    assert first.sanitized is not second.sanitized


def test_rendered_verdict_lists_errors_and_is_json() -> None:
    outcome = validate_parameters([spec("A", required=True)], {"B": 1})
    verdict = render_validation(outcome)
    assert verdict == {
        "status": "invalid",
        "errors": [
            {
                "parameter": "A",
                "code": "MISSING",
                "message": "Missing required parameter: A (string, e.g. 'example')",
            }
        ],
        "stripped_parameters": ["B"],
    }
    json.dumps(verdict)


def test_schema_forms_are_equivalent() -> None:
    entries = (spec("A", required=True), spec("B", type="integer"))
    forms = [
        WorkflowSchema(workflow_id="wf", parameters=entries),
        Workflow(workflow_id="wf", version="1", title="t", parameters=entries),
        list(entries),
        entries,
    ]
    results = [validate_parameters(f, {"B": "x"}) for f in forms]
    assert all(codes(r) == [("A", Code.MISSING), ("B", Code.WRONG_TYPE)] for r in results)


def test_mutated_list_schema_is_recompiled() -> None:
    schema = [spec("A")]
    assert validate_parameters(schema, {"A": "x"}).valid
    schema.append(spec("B", required=True))
    assert codes(validate_parameters(schema, {"A": "x"})) == [("B", Code.MISSING)]


def test_schema_cache_is_bounded() -> None:
    for i in range(params_module._SCHEMA_CACHE_SIZE + 20):
        validate_parameters([spec(f"P{i}")], {})
    assert len(params_module._schema_cache) <= params_module._SCHEMA_CACHE_SIZE


def test_duplicate_declaration_first_wins() -> None:
    schema = [spec("A", type="integer"), spec("A", type="string")]
    assert codes(validate_parameters(schema, {"A": "x"})) == [("A", Code.WRONG_TYPE)]


def test_none_parameters_means_empty() -> None:
    assert validate_parameters([spec("A")], None).valid
    assert codes(validate_parameters([spec("A", required=True)], None)) == [("A", Code.MISSING)]


@pytest.mark.parametrize("bad", [["A"], "A=1", 3])
def test_non_mapping_parameters_raise_type_error(bad: Any) -> None:
    with pytest.raises(TypeError, match="mapping"):
        validate_parameters([spec("A")], bad)


def test_non_spec_schema_entry_raises_type_error() -> None:
    with pytest.raises(TypeError, match="ParameterSpec"):
        validate_parameters([{"name": "A"}], {})  # type: ignore[list-item]


def test_no_warning_when_nothing_is_stripped(caplog: pytest.LogCaptureFixture) -> None:
    schema = [spec("A"), spec("B")]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        validate_parameters(schema, {"A": "x", "B": None})
        validate_parameters(schema, {"A": "x"})
        validate_parameters(schema, {})
    assert [r for r in caplog.records if r.name == LOGGER] == []


def test_stripped_names_are_escaped_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    forged = "X\nERROR forged log line"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outcome = validate_parameters([], {forged: 1, "Y" * 500: 2}, workflow_id="wf")
    assert outcome.stripped == tuple(sorted([forged, "Y" * 500]))
    message = caplog.records[-1].getMessage()
    assert "\n" not in message
    assert "Y" * 65 not in message


def test_outcome_types_are_frozen() -> None:
    outcome = validate_parameters([spec("A", required=True)], {})
    with pytest.raises(AttributeError):
        outcome.valid = True  # type: ignore[misc]
    with pytest.raises(AttributeError):
        outcome.errors[0].message = "x"  # type: ignore[misc]
    assert isinstance(outcome.errors[0], ParameterIssue)


def test_error_codes_match_the_proto_enum() -> None:
    from hapi.v1 import validation_pb2

    proto = {
        name.removeprefix("PARAMETER_ERROR_CODE_")
        for name in validation_pb2.ParameterErrorCode.keys()
        if name != "PARAMETER_ERROR_CODE_UNSPECIFIED"
    }
    assert {code.name for code in Code} == proto
    assert all(code.value == code.name for code in Code)


def test_sanitized_keeps_only_values_that_passed_their_checks() -> None:
    schema = [
        spec("GOOD", type="integer"),
        spec("BAD", type="integer"),
        spec("DEP", depends_on=["X"]),
    ]
    outcome = validate_parameters(schema, {"GOOD": 2.0, "BAD": "2", "DEP": "d", "EXTRA": 1})
    assert codes(outcome) == [("BAD", Code.WRONG_TYPE), ("DEP", Code.MISSING_DEPENDENCY)]
    # DEP's own value is fine; the missing dependency is a fact about the set.
    assert outcome.sanitized == {"GOOD": 2, "DEP": "d"}
    assert outcome.stripped == ("EXTRA",)
