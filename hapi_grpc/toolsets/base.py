"""What the service knows of a toolset: its `ToolsetPlugin` subclass.

Design notes: docs/internals.md (`toolsets/base.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from hapi_grpc.domain.toolsets.toolset import Tool, Toolset, ToolsetLimits, ToolsetSource
from hapi_grpc.toolsets.namespaces import NamespaceBound

if TYPE_CHECKING:
    from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
    from hapi_grpc.config import Settings
    from hapi_grpc.domain.history import RemediationHistory

__all__ = ["OpenContext", "Opened", "ToolsetPlugin"]

S = TypeVar("S", bound=BaseModel)


@dataclass
class Opened:
    """What `open` gives back: sources of toolsets to offer, and how to close them."""

    sources: list[ToolsetSource] = field(default_factory=list)
    close: Callable[[], Awaitable[None]] | None = None


@dataclass(frozen=True)
class OpenContext:
    """What the composition root lends `open` besides the toolset's own settings: the
    service's settings (another toolset's too, e.g. shared credentials) and its own
    remediation history (the one outcomes are recorded in)."""

    settings: Settings
    history: RemediationHistory | None = None

    def breaker(self, dependency: str) -> RateCircuitBreaker:
        """A circuit breaker for one outgoing dependency (the service's breaker settings)."""
        return self.settings.breaker(dependency)

    def namespaces(self) -> NamespaceBound:
        """The operator's namespace allow and deny lists (`HAPI_KUBERNETES_NAMESPACES_*`),
        which bound every toolset that reads by namespace, the Kubernetes one on or off."""
        settings = self.settings
        return NamespaceBound.of(
            settings.kubernetes_namespaces_allow, settings.kubernetes_namespaces_deny
        )


class ToolsetPlugin(Generic[S]):
    """One toolset as the service outside its package sees it; made with its settings.

    A subclass sets the class attributes and overrides what applies: `open`
    (None: not configured; a malformed setting raises ValueError naming the
    variable; a source that cannot be reached never fails startup, its tools
    answer "unavailable"), `limits`, `readable_files`, `argument_models`.
    """

    name: ClassVar[str]  # a toolset with several instances names them "<name>:<instance>"
    prompt_note: ClassVar[str]  # how the prompt's tools line names its tools
    prompt_guide: ClassVar[str] = ""  # how to investigate with it; "{calls}" is its call cap
    # Its HAPI_* settings (field `x_y` is variable HAPI_X_Y, documented with
    # `Field(description=...)`; the docstring introduces its section of
    # configuration.md); None: it uses the service's own settings.
    settings_model: ClassVar[type[BaseModel] | None] = None
    enabled_by: ClassVar[str] = ""  # the settings field that switches it on
    data_key: ClassVar[str] = ""  # its results are outside data, wrapped under this key
    investigates: ClassVar[bool] = True  # reads beyond the catalog (all but the catalog's)
    # Its tools' arguments are also recorded typed in `ToolCallRecord`, in the
    # `arguments` oneof field named as the tool (tools.proto). False: as text only.
    typed_arguments: ClassVar[bool] = False

    def __init__(self, settings: S) -> None:
        self.settings = settings

    @classmethod
    def settings_from(cls, values: object) -> S | None:
        """This toolset's settings, read from an object holding them as attributes."""
        if cls.settings_model is None:
            return None
        fields = cls.settings_model.model_fields
        return cls.settings_model.model_validate({n: getattr(values, n) for n in fields})  # type: ignore[return-value]

    @classmethod
    def argument_models(cls) -> Mapping[str, type[BaseModel]]:
        """Each tool's argument model (imported when called: tools are heavier than
        settings); empty for tools declared elsewhere (MCP servers declare their own)."""
        return {}

    @classmethod
    def toolset(
        cls, tools: Sequence[Tool], limits: ToolsetLimits, *, instance: str = "", note: str = ""
    ) -> Toolset:
        """One investigation's instance, named and described as this toolset."""
        return Toolset(
            f"{cls.name}:{instance}" if instance else cls.name,
            tuple(tools),
            limits,
            prompt_note=note or cls.prompt_note,
            prompt_guide=cls.prompt_guide,
            data_key=cls.data_key,
            investigates=cls.investigates,
        )

    @property
    def enabled(self) -> bool:
        """Whether its settings switch it on (its client is imported only then)."""
        return not self.enabled_by or bool(getattr(self.settings, self.enabled_by))

    def limits(self) -> ToolsetLimits | None:
        """Its call cap, per-call timeout and output cap; None: per instance (MCP)."""
        return None

    def readable_files(self) -> Sequence[str]:
        """The settings fields naming files that must be readable at start."""
        return ()

    async def open(self, context: OpenContext) -> Opened | None:
        """Its client and sources; None when not configured (see the class docstring)."""
        return None
