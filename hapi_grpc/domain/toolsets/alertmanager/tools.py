"""The `alertmanager` toolset: the alerts firing now, for storm context.

One read-only tool over the `AlertsReader` port: the active, unsilenced
alerts of a namespace and/or label set, summarised (names with counts, the
newest alerts with their labels and clipped annotations). Offered only when
`HAPI_ALERTMANAGER_URL` is set. Failures are answered like the `prometheus`
toolset's; answers are wrapped under `DATA_KEY`, data and never instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field, field_validator

from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.toolsets.alertmanager.spec import DATA_KEY, NAME, PROMPT_NOTE
from hapi_grpc.domain.toolsets.prometheus.port import AlertsReader
from hapi_grpc.domain.toolsets.prometheus.tools import metrics_failures
from hapi_grpc.domain.toolsets.tool import ToolArgs, ToolContext, ToolResult
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits

__all__ = [
    "ACTIVE_ALERTS_TOOL",
    "DATA_KEY",
    "NAME",
    "AlertmanagerActiveAlertsArgs",
    "AlertmanagerToolsetSource",
]

ACTIVE_ALERTS_TOOL = "alertmanager_active_alerts"
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_MAX_LABELS = 10
_guarded = metrics_failures(NAME)


class AlertmanagerActiveAlertsArgs(ToolArgs):
    """Arguments of `alertmanager_active_alerts` (proto `AlertmanagerActiveAlertsArgs`)."""

    namespace: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Only alerts with this namespace label",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        max_length=_MAX_LABELS,
        description='Only alerts with all these labels, e.g. {"service": "payment-api"}',
    )

    @field_validator("labels")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _LABEL.match(name):
                raise ValueError(f"{name[:60]!r} is not a label name")
            if len(text) > 256:
                raise ValueError(f"the value of {name!r} is longer than 256 characters")
        return value


@dataclass(frozen=True)
class AlertmanagerActiveAlerts:
    reader: AlertsReader
    name: str = ACTIVE_ALERTS_TOOL
    description: str = (
        "Alerts firing now (not silenced), for a namespace and/or labels: counts by alert name"
        " and the newest alerts with their labels and summaries. Shows whether the incident is"
        " part of a wider storm."
    )
    arguments: type[AlertmanagerActiveAlertsArgs] = AlertmanagerActiveAlertsArgs

    @_guarded
    async def run(self, args: AlertmanagerActiveAlertsArgs, ctx: ToolContext) -> ToolResult:
        summary = await self.reader.active_alerts(
            args.labels, namespace=args.namespace, timeout=ctx.timeout
        )
        if ctx.observed is not None:
            ctx.observed.record_alerts(summary)
        return ToolResult(ToolCallStatus.SUCCESS, {DATA_KEY: summary})


@dataclass(frozen=True)
class AlertmanagerToolsetSource:
    """Makes each investigation's `alertmanager` toolset."""

    reader: AlertsReader
    limits: ToolsetLimits

    def __call__(self) -> Toolset:
        return Toolset(
            NAME, (AlertmanagerActiveAlerts(self.reader),), self.limits, prompt_note=PROMPT_NOTE
        )
