"""What the `remediation_history` toolset reads through: the read side of the
service's `RemediationHistory` (domain.history). Recording is not in it: the
tool cannot write."""

from __future__ import annotations

from typing import Protocol

from hapi_grpc.domain.history import HistoryContext, HistoryUnavailableError, Windows
from hapi_grpc.domain.result import TargetResource

__all__ = ["HistoryReader", "HistoryUnavailableError"]


class HistoryReader(Protocol):
    """Reads a target's remediation history (raises HistoryUnavailableError)."""

    async def context(
        self, target: TargetResource, current_spec_hash: str, windows: Windows = Windows()
    ) -> HistoryContext: ...
