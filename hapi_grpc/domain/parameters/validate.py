"""`validate_parameters`: the validator's entry point.

It runs the compiled schema, then names the undeclared parameters it strips:
in the outcome (bounded in number, each cut to MAX_NAME_CHARS) and in one
WARNING line (cut shorter still, escaped), never with their values.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hapi_grpc.domain.catalog import ParameterSpec, Workflow, WorkflowSchema
from hapi_grpc.domain.parameters.display import log_text
from hapi_grpc.domain.parameters.limits import (
    LOG_ID_CHARS,
    LOG_NAMES_SHOWN,
    MAX_NAME_CHARS,
    MAX_STRIPPED_NAMES,
)
from hapi_grpc.domain.parameters.outcome import ValidationOutcome
from hapi_grpc.domain.parameters.schema import compiled
from hapi_grpc.domain.sensitive import clip

__all__ = ["validate_parameters"]

logger = logging.getLogger("hapi_grpc.domain.parameters")


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
    rules = compiled(schema)
    errors, sanitized, undeclared = rules.check(parameters)
    if not undeclared:
        return ValidationOutcome(not errors, tuple(errors), sanitized)
    names = _first_undeclared(parameters, rules.names)
    if logger.isEnabledFor(logging.WARNING):
        _log_stripped(names, undeclared, workflow_id)
    stripped = tuple(clip(n, MAX_NAME_CHARS) for n in names)
    return ValidationOutcome(not errors, tuple(errors), sanitized, stripped)


def _first_undeclared(parameters: Mapping[str, Any], declared: frozenset[str]) -> list[str]:
    """The first MAX_STRIPPED_NAMES undeclared names, sorted, uncut."""
    return heapq.nsmallest(MAX_STRIPPED_NAMES, [str(k) for k in parameters if k not in declared])


def _log_stripped(names: list[str], count: int, workflow_id: str) -> None:
    """One WARNING naming (never showing the values of) the stripped parameters.

    Names and the id are caller- or model-controlled: each is cut and escaped,
    and at most LOG_NAMES_SHOWN are listed, so the line stays short.
    """
    listed = [log_text(n) for n in names[:LOG_NAMES_SHOWN]]
    shown = ", ".join(listed)
    if count > len(listed):
        shown += f" and {count - len(listed)} more"
    workflow = log_text(workflow_id, LOG_ID_CHARS)
    logger.warning(
        "Stripped %d undeclared parameter(s) for workflow %s: %s",
        count,
        workflow or "<unknown>",
        shown,
        extra={"workflow_id": workflow, "stripped_parameters": listed},
    )
