"""Validation of proposed workflow parameters against a workflow's parameter schema.

Design notes: docs/internals.md (`domain/parameters/__init__.py`).
"""

from __future__ import annotations

from hapi_grpc.domain.parameters.limits import MAX_PATTERN_LENGTH
from hapi_grpc.domain.parameters.outcome import (
    ParameterErrorCode,
    ParameterIssue,
    ValidationOutcome,
)
from hapi_grpc.domain.parameters.validate import validate_parameters

__all__ = [
    "MAX_PATTERN_LENGTH",
    "ParameterErrorCode",
    "ParameterIssue",
    "ValidationOutcome",
    "validate_parameters",
]
