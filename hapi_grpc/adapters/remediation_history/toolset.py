"""Opener of the `remediation_history` toolset (its spec names it).

It reads the service's own `RemediationHistory` (the composition root lends
it: the instance `ReportRemediationOutcome` records into, embedded or Data
Storage), so it opens no client of its own and has nothing to close.
"""

from __future__ import annotations

from hapi_grpc.domain.toolsets.remediation_history.settings import RemediationHistorySettings
from hapi_grpc.domain.toolsets.remediation_history.spec import SPEC
from hapi_grpc.domain.toolsets.remediation_history.tools import RemediationHistorySource
from hapi_grpc.domain.toolsets.spec import OpenContext, Opened

__all__ = ["open_toolset"]


async def open_toolset(settings: RemediationHistorySettings, context: OpenContext) -> Opened | None:
    """The toolset when `HAPI_REMEDIATION_HISTORY_ENABLED` (default) and a history is lent."""
    history = context.history()
    if history is None:
        return None
    assert SPEC.limits is not None
    source = RemediationHistorySource(
        history, SPEC.limits(settings), settings.remediation_history_max_entries
    )
    return Opened([source])
