"""The `alertmanager` toolset; `SPEC` is what the rest of the service knows of it."""

from hapi_grpc.domain.toolsets.alertmanager.spec import SPEC

__all__ = ["SPEC"]
