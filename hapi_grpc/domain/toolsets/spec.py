"""What the rest of the service knows about a toolset: one `ToolsetSpec` each.

Every toolset package exports one spec (`<package>/spec.py`, imported cheaply:
no tools, no adapters), and `registry.TOOLSETS` lists them. The composition
root opens each configured toolset through its spec's `opener`; the
configuration, its reference, the prompt, the argument recorder and the
metrics read the specs instead of naming toolsets.

The domain imports no adapter, so `opener` is the import path
(`"package.module:function"`) of an adapter function with the `Opener`
signature, resolved by the composition root.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from hapi_grpc.domain.toolsets.limits import ToolsetLimits

if TYPE_CHECKING:
    from hapi_grpc.domain.history import RemediationHistory
    from hapi_grpc.domain.recording import ReadRecorder
    from hapi_grpc.domain.tenancy import Caller
    from hapi_grpc.domain.toolsets.toolset import Toolset

__all__ = ["OpenContext", "Opened", "Opener", "ToolsetSource", "ToolsetSpec"]

S = TypeVar("S", bound=BaseModel)

ToolsetSource = Callable[["Caller", "ReadRecorder"], "Toolset"]
"""Makes one investigation's instance of a toolset, for the caller who asked (a
toolset reads only what the caller may: `Caller.namespace`), reading its ports
through the investigation's recorder (`domain.recording`)."""


@dataclass
class Opened:
    """What an opener gives back: sources of toolsets to offer, and how to close them."""

    sources: list[ToolsetSource] = field(default_factory=list)
    close: Callable[[], Awaitable[None]] | None = None


class OpenContext(Protocol):
    """What the composition root lends an opener besides the toolset's own settings."""

    def breaker(self, dependency: str) -> Any:
        """A circuit breaker for one outgoing dependency (the service's breaker settings)."""
        ...

    def settings_of(self, toolset: str) -> BaseModel:
        """Another toolset's settings (e.g. shared credentials)."""
        ...

    def history(self) -> RemediationHistory | None:
        """The service's own remediation history (the one outcomes are recorded in);
        None when the composition root lent none."""
        ...


Opener = Callable[[Any, OpenContext], Awaitable[Opened | None]]
"""`async def open(settings, context) -> Opened | None` (None: not configured).

A malformed setting raises ValueError (one line, naming the variable); a source
that cannot be reached never fails startup (its tools answer "unavailable")."""


@dataclass(frozen=True, slots=True)
class ToolsetSpec(Generic[S]):
    """One toolset, as the service outside its package sees it."""

    name: str  # toolset name; a toolset with several instances names them "<name>:<instance>"
    prompt_note: str  # how the prompt's tools line names its tools
    # Its HAPI_* settings (field `x_y` is variable HAPI_X_Y; documented with
    # `Field(description=...)`); None: it uses the service's own settings.
    settings: type[S] | None = None
    enabled_by: str = ""  # the settings field that switches it on
    opener: str = ""  # "module:function" of its adapter's `Opener`; "": the engine builds it
    limits: Callable[[S], ToolsetLimits] | None = None  # its caps and per-call timeout
    readable_files: Callable[[S], Sequence[str]] | None = None  # fields naming files to check
    untrusted_data: bool = False  # its results are outside text the model must not obey
    data_key: str = ""  # the key its results are wrapped under ("metrics_data")
    prompt_guide: str = ""  # how to investigate with it; "{calls}" is its call cap
    # Each tool's argument model (imported when called: tools are heavier than
    # specs); None for tools declared elsewhere (MCP servers declare their own).
    argument_models: Callable[[], Mapping[str, type[BaseModel]]] | None = None
    # Its tools' arguments are also recorded typed in `ToolCallRecord`: in the
    # `arguments` oneof field named as the tool (tools.proto; the recorder finds
    # it by name and tests/toolsets/test_registry.py checks it matches the
    # model). False: as text only, needing no contract change.
    typed_arguments: bool = False

    def matches(self, toolset_name: str) -> bool:
        """Whether the offered toolset `toolset_name` is (an instance of) this one."""
        return toolset_name == self.name or toolset_name.startswith(self.name + ":")

    def settings_from(self, values: object) -> S | None:
        """This toolset's settings, read from an object holding them as attributes."""
        if self.settings is None:
            return None
        return self.settings.model_validate(
            {name: getattr(values, name) for name in self.settings.model_fields}
        )
