"""Whose a remediation is: the namespace it acts in and the caller that asked.

A remediation id is chosen by the caller, so two tenants may send the same
one (by accident, or to reach the other's remediation). Everything kept per
remediation id (kept results, locks, recorded decisions, reported outcomes)
is therefore kept under the id *within its tenant*: another tenant's id is
another remediation, never the same one. Nothing a caller sends can read,
replace or block another tenant's records, and the answer is the same
whether or not another tenant used the id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["Tenant"]

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
