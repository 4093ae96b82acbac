"""Settings of the `remediation_history` toolset (`HAPI_REMEDIATION_HISTORY_*`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["RemediationHistorySettings"]


class RemediationHistorySettings(BaseModel):
    """What was done to a target before and whether it worked, read from the service's
    remediation history (its own records, or Data Storage's; see outcomes.md).
    On by default: the history it reads is always there (embedded when nothing else
    is configured)."""

    remediation_history_enabled: bool = Field(
        True, description="Offer the `remediation_history` toolset to the decider."
    )
    remediation_history_max_calls: int = Field(
        2, ge=0, le=20, description="Remediation history tool calls per investigation."
    )
    remediation_history_timeout_seconds: float = Field(2.0, gt=0, le=60, description="Per call.")
    remediation_history_max_entries: int = Field(
        10, ge=1, le=100, description="Most recent entries shown per call (older ones counted)."
    )
    remediation_history_max_output_chars: int = Field(
        6_000, ge=1_000, le=32_000, description="Characters of one answer at most."
    )
