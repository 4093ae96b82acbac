"""The `workflow_catalog` toolset's spec: search the catalog, validate parameters.

Offered in every investigation and built by the engine itself: its session
feeds the final check and the selection gate. Its settings (embedded catalog
or Data Storage, the call cap) are the service's own, shared with the
`ValidateWorkflowParameters` RPC, so it has no opener or settings model here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from hapi_grpc.domain.toolsets.spec import ToolsetSpec

__all__ = ["NAME", "PROMPT_NOTE", "SPEC"]

NAME = "workflow_catalog"
PROMPT_NOTE = "the two catalog tools"


def _argument_models() -> Mapping[str, type[BaseModel]]:
    from hapi_grpc.domain.toolsets.workflow_catalog.tools import (
        SEARCH_TOOL,
        VALIDATE_TOOL,
        SearchWorkflowCatalogArgs,
        ValidateWorkflowParametersArgs,
    )

    return {SEARCH_TOOL: SearchWorkflowCatalogArgs, VALIDATE_TOOL: ValidateWorkflowParametersArgs}


SPEC: ToolsetSpec[Any] = ToolsetSpec(
    name=NAME, prompt_note=PROMPT_NOTE, argument_models=_argument_models, typed_arguments=True
)
