"""Who asks, and whose a remediation is: the namespace it acts in and the caller.

Design notes: docs/internals.md (`domain/tenancy.py`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

__all__ = ["Caller", "Exposure", "Tenant"]

Exposure = Literal["full", "summary", "none"]
"""How much of what the tools read goes back to a caller (HAPI_TOOL_OUTPUT_EXPOSURE):
`full`; `summary`: tool-call records without their raw output; `none`: no tool-call
records and no model text (which may quote what the tools read)."""

_DIGEST_CHARS = 16  # 64 bits of SHA-256: distinct callers never share a scope


@dataclass(frozen=True, slots=True)
class Tenant:
    """A namespace ("" for cluster-scoped resources) and the authenticated
    caller's user name ("" without authentication)."""

    namespace: str = ""
    caller: str = ""

    @property
    def scope(self) -> str:
        """`<namespace>/<caller digest>` ("-" for either when empty). Neither a
        namespace nor a digest holds '/', so no two tenants share a scope."""
        digest = (
            hashlib.sha256(self.caller.encode()).hexdigest()[:_DIGEST_CHARS] if self.caller else "-"
        )
        return f"{self.namespace or '-'}/{digest}"

    def key(self, remediation_id: str) -> str:
        """The id within this tenant ('/' is not allowed in a remediation id)."""
        return f"{self.scope}/{remediation_id}"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: the authenticated user name ("" without authentication), the one
    namespace its investigations may read besides cluster-scoped objects (the one it
    was authorized for; None: no such bound) and its exposure."""

    name: str = ""
    namespace: str | None = None
    exposure: Exposure = "full"

    def reads(self, namespace: str) -> bool:
        """Whether its investigations may read `namespace` ("": cluster-scoped, always)."""
        return self.namespace is None or namespace in ("", self.namespace)

    def tenant(self, namespace: str) -> Tenant:
        """The tenant this caller is in `namespace`."""
        return Tenant(namespace, self.name)
