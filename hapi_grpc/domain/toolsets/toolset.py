"""A toolset: a named group of tools with its own limits.

Each toolset brings its own call cap, per-call timeout and output size cap
(the workflow catalog keeps BR-HAPI-048's cap of 10; investigation toolsets
set theirs). `prompt_note` is how the system prompt names the toolset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hapi_grpc.domain.llm import ToolDefinition
from hapi_grpc.domain.toolsets.limits import ToolsetLimits
from hapi_grpc.domain.toolsets.tool import Tool, tool_definition

__all__ = ["Toolset", "ToolsetLimits"]


@dataclass(frozen=True, slots=True)
class Toolset:
    name: str
    tools: tuple[Tool, ...]
    limits: ToolsetLimits
    prompt_note: str = ""

    def __init__(
        self, name: str, tools: Sequence[Tool], limits: ToolsetLimits, prompt_note: str = ""
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "tools", tuple(tools))
        object.__setattr__(self, "limits", limits)
        object.__setattr__(self, "prompt_note", prompt_note)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def definitions(self) -> list[ToolDefinition]:
        return [tool_definition(tool) for tool in self.tools]
