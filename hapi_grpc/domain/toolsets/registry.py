"""Every toolset the service knows, in the order they are opened and documented.

Adding a toolset: write its package (`domain/toolsets/<name>/` with a `spec.py`
exporting `SPEC`), its adapter (whose opener `SPEC.opener` names), and add its
spec here. Nothing else names it.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.toolsets.alertmanager.spec import SPEC as ALERTMANAGER
from hapi_grpc.domain.toolsets.kubernetes.spec import SPEC as KUBERNETES
from hapi_grpc.domain.toolsets.mcp.spec import SPEC as MCP
from hapi_grpc.domain.toolsets.prometheus.spec import SPEC as PROMETHEUS
from hapi_grpc.domain.toolsets.remediation_history.spec import SPEC as REMEDIATION_HISTORY
from hapi_grpc.domain.toolsets.spec import ToolsetSpec
from hapi_grpc.domain.toolsets.workflow_catalog.spec import SPEC as WORKFLOW_CATALOG

__all__ = ["TOOLSETS", "spec_for"]

TOOLSETS: tuple[ToolsetSpec[Any], ...] = (
    WORKFLOW_CATALOG,
    KUBERNETES,
    PROMETHEUS,
    ALERTMANAGER,
    REMEDIATION_HISTORY,
    MCP,
)


def spec_for(toolset_name: str) -> ToolsetSpec[Any] | None:
    """The spec of an offered toolset (`mcp:<server>` is an instance of `mcp`)."""
    for spec in TOOLSETS:
        if spec.matches(toolset_name):
            return spec
    return None
