"""Workflow parameter validation as the RPC serves it: the domain check, counted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hapi_grpc.domain.catalog import WorkflowCatalog, WorkflowSchema
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.parameters import ValidationOutcome
from hapi_grpc.domain.workflow_validation import validate_workflow_parameters
from hapi_grpc.observability import metrics

__all__ = ["ParameterValidation"]

# Counters of the RPC's verdicts, resolved once: `labels()` locks on every call.
_RPC_VALIDATIONS = {
    valid: metrics.VALIDATION_ATTEMPTS.labels(source="rpc", result="valid" if valid else "invalid")
    for valid in (True, False)
}


class ParameterValidation:
    """Checks a caller's parameters against a workflow of `catalog`."""

    def __init__(self, catalog: WorkflowCatalog) -> None:
        self._catalog = catalog

    async def validate(
        self, workflow_id: str, parameters: Mapping[str, Any], budget: Budget
    ) -> tuple[WorkflowSchema, ValidationOutcome]:
        """The workflow's schema and the verdict on `parameters`."""
        with budget_scope(budget):
            schema, outcome = await validate_workflow_parameters(
                self._catalog, workflow_id, parameters
            )
        _RPC_VALIDATIONS[outcome.valid].inc()
        return schema, outcome
