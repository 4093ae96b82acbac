"""The `workflow_catalog` toolset; `SPEC` is what the rest of the service knows of it."""

from hapi_grpc.domain.toolsets.workflow_catalog.spec import SPEC

__all__ = ["SPEC"]
