"""`validate_parameters`: the validator's entry point, and its one log line."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hapi_grpc.domain.catalog import ParameterSpec, Workflow, WorkflowSchema
from hapi_grpc.domain.parameters.display import log_text
from hapi_grpc.domain.parameters.limits import LOG_NAMES_SHOWN
from hapi_grpc.domain.parameters.outcome import ValidationOutcome
from hapi_grpc.domain.parameters.schema import compiled

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
    outcome, undeclared = compiled(schema).validate(parameters)
    if undeclared:
        _log_stripped(outcome.stripped, undeclared, workflow_id)
    return outcome


def _log_stripped(names: tuple[str, ...], count: int, workflow_id: str) -> None:
    """One WARNING naming (never showing the values of) the stripped parameters.

    Names and the id are caller- or model-controlled: each is cut and escaped,
    and at most LOG_NAMES_SHOWN are listed, so the line stays short.
    """
    listed = [log_text(n) for n in names[:LOG_NAMES_SHOWN]]
    shown = ", ".join(listed)
    if count > len(listed):
        shown += f" and {count - len(listed)} more"
    workflow = log_text(workflow_id)
    logger.warning(
        "Stripped %d undeclared parameter(s) for workflow %s: %s",
        count,
        workflow or "<unknown>",
        shown,
        extra={"workflow_id": workflow, "stripped_parameters": listed},
    )
