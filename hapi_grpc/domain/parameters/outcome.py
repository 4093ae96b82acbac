"""What the validator returns: error codes, issues and the verdict."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParameterErrorCode", "ParameterIssue", "ValidationOutcome"]


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
    that were removed, sorted: at most MAX_STRIPPED_NAMES of them, each cut
    to MAX_NAME_CHARS characters with a marker saying how much was cut.
    """

    valid: bool
    errors: tuple[ParameterIssue, ...]
    sanitized: dict[str, Any] = field(hash=False)
    stripped: tuple[str, ...] = ()
