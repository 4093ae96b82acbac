"""Validation of proposed workflow parameters against a workflow's parameter schema.

`validate_parameters` is the single entry point. It serves the LLM tool
`validate_workflow_parameters`, the check of the investigation's final answer,
the `ValidateWorkflowParameters` RPC and Python clients. It is pure: no I/O
beyond a WARNING log when undeclared parameters are stripped.

The package: `outcome` (the types returned), `limits`, `schema` (the compiled
schema and its cache), `patterns` (RE2), `rules` (the checks, which return
codes plus data), `wording` (messages and examples), `display` (bounded
renderings of values and names), `validate` (the entry point).

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
- Undeclared parameters are stripped and logged by name (never by value);
  names are cut with a marker saying how much was cut (`limits`).
- The sanitized output keeps only values that passed their own checks, so it
  is always safe to serialise. Schema defaults are not injected: the executor
  applies them.
- Messages name the parameter, what is allowed and an example, and echo at
  most a short escaped prefix of the offending value; values of parameters
  whose names look secret (`sensitive.is_secret_name`) are shown as
  `sensitive.REDACTED`.

Errors come in schema order; within a parameter, in the order of the checks.
"""

from __future__ import annotations

from hapi_grpc.domain.parameters.limits import (
    MAX_NAME_CHARS,
    MAX_PATTERN_LENGTH,
    MAX_SAFE_INTEGER,
    MAX_STRING_LENGTH,
    MAX_STRIPPED_NAMES,
)
from hapi_grpc.domain.parameters.outcome import (
    ParameterErrorCode,
    ParameterIssue,
    ValidationOutcome,
)
from hapi_grpc.domain.parameters.validate import validate_parameters

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_PATTERN_LENGTH",
    "MAX_SAFE_INTEGER",
    "MAX_STRING_LENGTH",
    "MAX_STRIPPED_NAMES",
    "ParameterErrorCode",
    "ParameterIssue",
    "ValidationOutcome",
    "validate_parameters",
]
