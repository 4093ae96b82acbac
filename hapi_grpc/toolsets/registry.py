"""Every toolset the service knows, in the order they are opened and documented, and
the opening of the configured ones (for the composition root).

Adding a toolset: its package (`hapi_grpc/toolsets/<name>/`, whose `__init__`
defines its settings and its `ToolsetPlugin` subclass) and one line in
`TOOLSETS`. Nothing else names it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from hapi_grpc.domain.toolsets.toolset import ToolsetSource
from hapi_grpc.domain.toolsets.workflow_catalog.tools import NAME as CATALOG
from hapi_grpc.domain.toolsets.workflow_catalog.tools import PROMPT_NOTE
from hapi_grpc.toolsets.alertmanager import AlertmanagerToolset
from hapi_grpc.toolsets.base import OpenContext, ToolsetPlugin
from hapi_grpc.toolsets.kubernetes import KubernetesToolset
from hapi_grpc.toolsets.mcp import McpToolset
from hapi_grpc.toolsets.prometheus import PrometheusToolset
from hapi_grpc.toolsets.remediation_history import RemediationHistoryToolset

if TYPE_CHECKING:
    from hapi_grpc.config import Settings
    from hapi_grpc.domain.history import RemediationHistory as History

__all__ = [
    "TOOLSETS",
    "WorkflowCatalogToolset",
    "open_toolsets",
    "prompt_template_hash",
]

log = logging.getLogger(__name__)


class WorkflowCatalogToolset(ToolsetPlugin[BaseModel]):
    """Search the catalog and validate parameters: offered in every investigation and
    built by the engine itself (its session feeds the final check and the selection
    gate). Its settings are the service's own, shared with `ValidateWorkflowParameters`."""

    name = CATALOG
    prompt_note = PROMPT_NOTE
    investigates = False
    typed_arguments = True

    @classmethod
    def argument_models(cls) -> dict[str, type[BaseModel]]:
        from hapi_grpc.domain.toolsets.workflow_catalog import tools

        return {
            tools.SEARCH_TOOL: tools.SearchWorkflowCatalogArgs,
            tools.VALIDATE_TOOL: tools.ValidateWorkflowParametersArgs,
        }


TOOLSETS: tuple[type[ToolsetPlugin[Any]], ...] = (
    WorkflowCatalogToolset,
    KubernetesToolset,
    PrometheusToolset,
    AlertmanagerToolset,
    RemediationHistoryToolset,
    McpToolset,
)


@lru_cache(maxsize=1)
def prompt_template_hash() -> str:
    """`sha256:<hex>` of the system prompt template this code sends: the instructions
    and each toolset's note and guide, rendered with the catalog tools only and with
    every registered toolset. Changing any of them changes it; the settings that fill
    in numbers (validation attempts, call caps) do not. Evaluation reports record it."""
    from hapi_grpc.domain.prompt import system_prompt

    texts = (system_prompt(), system_prompt(toolsets=TOOLSETS))
    return "sha256:" + hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()


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


async def open_toolsets(settings: Settings, history: History | None = None) -> OpenedToolsets:
    """Every registered toolset that is configured, opened in registry order.

    A malformed setting or file raises ConfigError (what opened is closed first);
    a source or server that cannot be reached never fails startup (its tools
    answer "unavailable").
    """
    from hapi_grpc.config import ConfigError
    from hapi_grpc.observability.metrics import TOOLSET_ENABLED

    opened = OpenedToolsets()
    context = OpenContext(settings, history)
    for toolset_class in TOOLSETS:
        if toolset_class is WorkflowCatalogToolset:  # built by the engine: always offered
            TOOLSET_ENABLED.labels(toolset_class.name).set(1)
            continue
        TOOLSET_ENABLED.labels(toolset_class.name).set(0)
        toolset = toolset_class(toolset_class.settings_from(settings))
        if not toolset.enabled:
            continue  # not configured: its client is never imported
        try:
            found = await toolset.open(context)
        except ValueError as exc:
            await opened.close()
            raise ConfigError(" ".join(str(exc).split())) from None
        if found is not None:
            TOOLSET_ENABLED.labels(toolset.name).set(1)
            opened.sources.extend(found.sources)
            if found.close is not None:
                opened.closers.append(found.close)
    return opened
