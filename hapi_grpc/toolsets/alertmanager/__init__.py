"""The `alertmanager` toolset: what else is firing now. Its settings and what the
service knows of it; the client (`client`) and the tool (`tools`) are imported when
it is opened. It is reached with the `prometheus` toolset's token file, CA bundle
and headers.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field, field_validator

from hapi_grpc.domain.toolsets.settings import check_url
from hapi_grpc.domain.toolsets.toolset import ToolsetLimits
from hapi_grpc.toolsets.base import OpenContext, Opened, ToolsetPlugin
from hapi_grpc.toolsets.prometheus import PrometheusToolset

__all__ = ["AlertmanagerSettings", "AlertmanagerToolset"]


class AlertmanagerSettings(BaseModel):
    """The alerts firing now, from Alertmanager; reached with the `prometheus`
    toolset's token file, CA bundle and headers."""

    alertmanager_url: str | None = Field(
        None, description="Alertmanager (API v2); enables the `alertmanager` toolset."
    )
    alertmanager_max_calls: int = Field(
        3, ge=0, le=100, description="Alertmanager tool calls per investigation."
    )
    alertmanager_timeout_seconds: float = Field(5.0, gt=0, le=300, description="Per call.")

    @field_validator("alertmanager_url")
    @classmethod
    def _alertmanager_url(cls, value: str | None) -> str | None:
        return check_url(value, ("http", "https"))


class AlertmanagerToolset(ToolsetPlugin[AlertmanagerSettings]):
    """One tool: the active, unsilenced alerts of a namespace and/or label set."""

    name = "alertmanager"
    prompt_note = "alertmanager_active_alerts (what else is firing now)"
    settings_model = AlertmanagerSettings
    enabled_by = "alertmanager_url"
    data_key = "alerts_data"
    typed_arguments = True

    @classmethod
    def argument_models(cls) -> Mapping[str, type[BaseModel]]:
        from hapi_grpc.toolsets.alertmanager import tools

        return {tools.ACTIVE_ALERTS_TOOL: tools.AlertmanagerActiveAlertsArgs}

    def limits(self) -> ToolsetLimits:
        return ToolsetLimits(
            max_calls=self.settings.alertmanager_max_calls,
            call_timeout=self.settings.alertmanager_timeout_seconds,
        )

    def readable_files(self) -> tuple[str, ...]:
        # Its credentials are the prometheus toolset's settings, read even when only
        # Alertmanager is configured.
        return ("prometheus_token_file", "prometheus_ca_file")

    async def open(self, context: OpenContext) -> Opened | None:
        """The toolset over a client of `HAPI_ALERTMANAGER_URL`."""
        from hapi_grpc.toolsets.alertmanager.client import AlertmanagerClient
        from hapi_grpc.toolsets.alertmanager.tools import AlertmanagerToolsetSource

        assert self.settings.alertmanager_url is not None  # `enabled`
        credentials = PrometheusToolset.settings_from(context.settings)
        assert credentials is not None  # it has settings
        client = AlertmanagerClient.of(
            self.settings.alertmanager_url, credentials, self.settings.alertmanager_timeout_seconds
        )
        source = AlertmanagerToolsetSource(client, self.limits(), context.namespaces())
        return Opened([source], client.close)
