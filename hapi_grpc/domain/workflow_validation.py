"""Validate proposed parameters against a catalog workflow's schema.

One function serves the `validate_workflow_parameters` tool, the check of an
investigation's final answer and the `ValidateWorkflowParameters` RPC, so the
three can never disagree about what is valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hapi_grpc.domain.catalog import WorkflowCatalog, WorkflowSchema, is_valid_workflow_id
from hapi_grpc.domain.errors import FieldViolation, InvalidRequestError
from hapi_grpc.domain.parameters import ValidationOutcome, validate_parameters

__all__ = ["MAX_PROPOSED_PARAMETERS", "validate_workflow_parameters"]

# Proposed parameters accepted in one request. This is a domain rule rather
# than a protovalidate rule on the proto's Struct: a CEL rule over a Struct
# makes protovalidate convert the whole Struct on every call, which tripled
# the cost of validating the request.
MAX_PROPOSED_PARAMETERS = 64


async def validate_workflow_parameters(
    catalog: WorkflowCatalog, workflow_id: str, parameters: Mapping[str, Any] | None
) -> tuple[WorkflowSchema, ValidationOutcome]:
    """Fetch `workflow_id`'s schema from `catalog` and validate `parameters` against it.

    Raises InvalidRequestError for an id that is not a safe path segment (it
    is never sent to the catalog) or more than MAX_PROPOSED_PARAMETERS
    parameters, and whatever the catalog raises:
    WorkflowNotFoundError, CatalogUnavailableError, BudgetExhaustedError.
    """
    if not is_valid_workflow_id(workflow_id):
        raise InvalidRequestError(
            "workflow_id is not a valid catalog id",
            [
                FieldViolation(
                    "workflow_id",
                    "must be 1-128 letters, digits, '.', '_' or '-', start with a letter"
                    " or digit and not contain '..'",
                    "workflow_id.pattern",
                )
            ],
        )
    if parameters is not None and len(parameters) > MAX_PROPOSED_PARAMETERS:
        raise InvalidRequestError(
            f"{len(parameters)} parameters were proposed; at most {MAX_PROPOSED_PARAMETERS}"
            " are accepted: send only the parameters the workflow declares",
            [
                FieldViolation(
                    "parameters",
                    f"at most {MAX_PROPOSED_PARAMETERS} parameters may be proposed",
                    "parameters.max_fields",
                )
            ],
        )
    schema = await catalog.get_schema(workflow_id)
    return schema, validate_parameters(schema, parameters, workflow_id=workflow_id)
