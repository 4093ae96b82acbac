"""The `remediation_history` toolset; `SPEC` is what the rest of the service knows of it."""

from hapi_grpc.domain.toolsets.remediation_history.spec import SPEC

__all__ = ["SPEC"]
