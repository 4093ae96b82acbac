"""The `workflow_catalog` toolset's spec: search the catalog, validate parameters.

Offered in every investigation and built by the engine itself: its session
feeds the final check and the selection gate. Its settings (embedded catalog
or Data Storage, the call cap) are the service's own, shared with the
`ValidateWorkflowParameters` RPC, so it has no opener or settings model here.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.toolsets.spec import ToolsetSpec

__all__ = ["NAME", "PROMPT_NOTE", "SPEC"]

NAME = "workflow_catalog"
PROMPT_NOTE = "the two catalog tools"

SPEC: ToolsetSpec[Any] = ToolsetSpec(name=NAME, prompt_note=PROMPT_NOTE)
