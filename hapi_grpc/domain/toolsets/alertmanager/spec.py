"""The `alertmanager` toolset's spec: what else is firing now."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from hapi_grpc.domain.toolsets.alertmanager.settings import AlertmanagerSettings
from hapi_grpc.domain.toolsets.limits import ToolsetLimits
from hapi_grpc.domain.toolsets.spec import ToolsetSpec

__all__ = ["DATA_KEY", "NAME", "PROMPT_NOTE", "SPEC"]

NAME = "alertmanager"
DATA_KEY = "alerts_data"
PROMPT_NOTE = "alertmanager_active_alerts (what else is firing now)"


def _limits(settings: AlertmanagerSettings) -> ToolsetLimits:
    return ToolsetLimits(
        max_calls=settings.alertmanager_max_calls,
        call_timeout=settings.alertmanager_timeout_seconds,
    )


def _files(settings: AlertmanagerSettings) -> tuple[str, ...]:
    # Its credentials are the prometheus toolset's settings, read even when only
    # Alertmanager is configured.
    return ("prometheus_token_file", "prometheus_ca_file") if settings.alertmanager_url else ()


def _argument_models() -> Mapping[str, type[BaseModel]]:
    from hapi_grpc.domain.toolsets.alertmanager.tools import (
        ACTIVE_ALERTS_TOOL,
        AlertmanagerActiveAlertsArgs,
    )

    return {ACTIVE_ALERTS_TOOL: AlertmanagerActiveAlertsArgs}


SPEC = ToolsetSpec(
    name=NAME,
    prompt_note=PROMPT_NOTE,
    argument_models=_argument_models,
    typed_arguments=True,
    settings=AlertmanagerSettings,
    enabled_by="alertmanager_url",
    opener="hapi_grpc.adapters.metrics.toolsets:open_alertmanager",
    limits=_limits,
    readable_files=_files,
    untrusted_data=True,
    data_key=DATA_KEY,
)
