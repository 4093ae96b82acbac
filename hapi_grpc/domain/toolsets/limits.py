"""A toolset's own limits: call cap, per-call timeout and output cap.

The workflow catalog keeps BR-HAPI-048's cap of 10; investigation toolsets set
theirs from their settings (`ToolsetSpec.limits`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ToolsetLimits"]


@dataclass(frozen=True, slots=True)
class ToolsetLimits:
    max_calls: int  # per investigation; further calls are refused
    call_timeout: float  # seconds, always clipped to the investigation's budget
    max_output_chars: int = 32_000  # longer results are cut, with a marker

    def __post_init__(self) -> None:
        if self.max_calls < 0 or self.call_timeout <= 0 or self.max_output_chars < 256:
            raise ValueError("toolset limits: max_calls >= 0, call_timeout > 0, output >= 256")
