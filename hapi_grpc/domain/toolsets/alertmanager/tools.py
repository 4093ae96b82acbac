"""The `alertmanager` toolset: the alerts firing now, for storm context.

One read-only tool over the `AlertsReader` port: the active, unsilenced
alerts of a namespace and/or label set, summarised (names with counts, the
newest alerts with their labels and clipped annotations). Offered only when
`HAPI_ALERTMANAGER_URL` is set. Failures are answered like the `prometheus`
toolset's; answers are wrapped under `DATA_KEY`, data and never instructions.
"""

from __future__ import annotations

from dataclasses import dataclass

from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets import arguments_gen as proto
from hapi_grpc.domain.toolsets.alertmanager.spec import DATA_KEY, NAME, PROMPT_NOTE
from hapi_grpc.domain.toolsets.prometheus.port import AlertsReader
from hapi_grpc.domain.toolsets.prometheus.tools import metrics_failures
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits

__all__ = [
    "ACTIVE_ALERTS_TOOL",
    "DATA_KEY",
    "NAME",
    "AlertmanagerActiveAlertsArgs",
    "AlertmanagerToolsetSource",
]

ACTIVE_ALERTS_TOOL = "alertmanager_active_alerts"
_guarded = metrics_failures(NAME)


# The generated model as it is: tools.proto says all it checks (label names
# by pattern, at most 10 labels, values up to 256 characters).
AlertmanagerActiveAlertsArgs = proto.AlertmanagerActiveAlertsArgs


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

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        reader = recorder.reading(self.reader)
        return Toolset(
            NAME, (AlertmanagerActiveAlerts(reader),), self.limits, prompt_note=PROMPT_NOTE
        )
