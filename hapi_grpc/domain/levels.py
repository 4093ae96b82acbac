"""Severity and risk: the two graded scales of the domain.

String enums, so a value equals its lower-case text ("critical"), reads and
writes as that text in JSON, and maps to the proto enums in one place
(`transport/converters.py`).
"""

from __future__ import annotations

import enum

__all__ = ["RiskLevel", "Severity"]


class Severity(enum.StrEnum):
    """Severity of a signal or of the RCA, most severe first."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class RiskLevel(enum.StrEnum):
    """Estimated risk of running a workflow, or the business's tolerance of risk."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
