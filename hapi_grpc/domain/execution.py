"""What a controller executed and how it failed (`hapi.v1` ExecutedWorkflow, ExecutionFailure).

Shared by a recovery request (what was tried before) and an outcome report.
Parameters are plain JSON values, as the controller sent them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["ExecutedWorkflow", "ExecutionFailure"]


@dataclass(frozen=True, slots=True)
class ExecutedWorkflow:
    workflow_id: str
    version: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecutionFailure:
    reason: str  # Kubernetes reason code, e.g. "OOMKilled", "Forbidden"
    message: str = ""  # untrusted text
    failed_step_index: int = 0
    failed_step_name: str = ""
    exit_code: int | None = None
    failed_at: datetime | None = None
    execution_seconds: float | None = None
