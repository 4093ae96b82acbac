"""Opening the registered toolsets a deployment configured (part of the composition root).

Each toolset with an opener (`ToolsetSpec.opener`) and switched on by its
settings is opened here, in registry order; its adapter's module is imported
only then. `app.serve` offers the sources to every investigation and closes
them at shutdown.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from hapi_grpc.config import ConfigError, Settings
from hapi_grpc.domain.history import RemediationHistory
from hapi_grpc.domain.toolsets.registry import TOOLSETS, spec_for
from hapi_grpc.domain.toolsets.spec import Opener, ToolsetSource
from hapi_grpc.observability.metrics import TOOLSET_ENABLED

if TYPE_CHECKING:
    from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker

__all__ = ["OpenedToolsets", "open_toolsets"]

log = logging.getLogger(__name__)


@dataclass
class OpenedToolsets:
    """The toolsets a deployment configured: their sources and how to close them."""

    sources: list[ToolsetSource] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def close(self) -> None:
        for close in reversed(self.closers):
            try:
                await close()
            except Exception:  # shutting down: log and go on with the rest
                log.exception("closing a toolset client failed")


@dataclass(frozen=True)
class _OpenContext:
    settings: Settings
    shared_history: RemediationHistory | None = None

    def breaker(self, dependency: str) -> RateCircuitBreaker:
        return self.settings.breaker(dependency)

    def settings_of(self, toolset: str) -> BaseModel:
        spec = spec_for(toolset)
        found = spec.settings_from(self.settings) if spec is not None else None
        if found is None:
            raise KeyError(f"no toolset {toolset!r} with settings")
        return found

    def history(self) -> RemediationHistory | None:
        return self.shared_history


async def open_toolsets(
    settings: Settings, history: RemediationHistory | None = None
) -> OpenedToolsets:
    """Every registered toolset that has an opener and is configured, in registry order.

    A malformed setting or file raises ConfigError (what opened is closed first);
    a source or server that cannot be reached never fails startup (its tools
    answer "unavailable"). An opener's module is imported only here: the MCP SDK
    alone is tens of megabytes that a server without MCP would carry.
    """
    opened = OpenedToolsets()
    context = _OpenContext(settings, history)
    for spec in TOOLSETS:
        if not spec.opener:  # built by the engine (the workflow catalog): always offered
            TOOLSET_ENABLED.labels(spec.name).set(1)
            continue
        TOOLSET_ENABLED.labels(spec.name).set(0)
        own = spec.settings_from(settings)
        if spec.enabled_by and not getattr(own, spec.enabled_by):
            continue  # not configured: its adapter is never imported
        module, _, function = spec.opener.partition(":")
        opener: Opener = getattr(importlib.import_module(module), function)
        try:
            toolset = await opener(own, context)
        except ValueError as exc:
            await opened.close()
            raise ConfigError(" ".join(str(exc).split())) from None
        if toolset is not None:
            TOOLSET_ENABLED.labels(spec.name).set(1)
            opened.sources.extend(toolset.sources)
            if toolset.close is not None:
                opened.closers.append(toolset.close)
    return opened
