"""Recovery: a new decision after a remediation of the incident failed.

- `context`: what the controller tells (attempt, maximum, previous executions);
- `failures`: the one table classifying a failure's reason code;
- `repeats`: whether a selection repeats a failed attempt, and the selection
  check that refuses such a repeat;
- `prompt`: the recovery section of the prompt.
"""

from hapi_grpc.domain.recovery.context import (
    OriginalAnalysis,
    PreviousExecution,
    RecoveryContext,
)

__all__ = ["OriginalAnalysis", "PreviousExecution", "RecoveryContext"]
