"""A toolset: a named group of tools with its own limits, as one investigation offers it.

Design notes: docs/internals.md (`domain/toolsets/toolset.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass

from hapi_grpc.domain.llm import ToolDefinition
from hapi_grpc.domain.recording import ReadRecorder
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.tool import Tool, tool_definition

__all__ = ["Tool", "Toolset", "ToolsetLimits", "ToolsetSource"]


@dataclass(frozen=True, slots=True)
class ToolsetLimits:
    max_calls: int  # per investigation; further calls are refused
    call_timeout: float  # seconds, always clipped to the investigation's budget
    max_output_chars: int = 32_000  # longer results are cut, with a marker

    def __post_init__(self) -> None:
        if self.max_calls < 0 or self.call_timeout <= 0 or self.max_output_chars < 256:
            raise ValueError("toolset limits: max_calls >= 0, call_timeout > 0, output >= 256")


@dataclass(frozen=True, slots=True)
class Toolset:
    name: str
    tools: tuple[Tool, ...]  # a list given is kept as a tuple
    limits: ToolsetLimits
    prompt_note: str = ""
    _: KW_ONLY
    prompt_guide: str = ""
    data_key: str = ""
    investigates: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(self.tools))

    def definitions(self) -> list[ToolDefinition]:
        return [tool_definition(tool) for tool in self.tools]


ToolsetSource = Callable[[Caller, ReadRecorder], Toolset]
"""Makes one investigation's instance of a toolset (its own counters and budget), for
the caller who asked (a toolset reads only what the caller may: `Caller.namespace`),
reading its clients through the investigation's recorder (`domain.recording`)."""
