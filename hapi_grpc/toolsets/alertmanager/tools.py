"""The `alertmanager` tool: the alerts firing now, for storm context, and the facts it
records.

Design notes: docs/internals.md (`toolsets/alertmanager/tools.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.observed.facts import AlertFacts
from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets import arguments_gen as proto
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult, refused
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.toolsets.alertmanager import AlertmanagerToolset
from hapi_grpc.toolsets.alertmanager.client import AlertmanagerClient
from hapi_grpc.toolsets.namespaces import ANYWHERE, NamespaceBound, ScopeRefusal
from hapi_grpc.toolsets.prometheus.tools import metrics_failures

__all__ = ["ACTIVE_ALERTS_TOOL", "AlertmanagerActiveAlertsArgs", "AlertmanagerToolsetSource"]

ACTIVE_ALERTS_TOOL = "alertmanager_active_alerts"
_guarded = metrics_failures(AlertmanagerToolset.name)


# The generated model as it is: tools.proto says all it checks (label names
# by pattern, at most 10 labels, values up to 256 characters).
AlertmanagerActiveAlertsArgs = proto.AlertmanagerActiveAlertsArgs


def record_alerts(observed: Observed, summary: dict[str, Any]) -> None:
    """Alerts firing now, as the tool read them (`AlertmanagerClient.active_alerts`)."""
    alerts: list[AlertFacts] = []
    for alert in summary.get("alerts") or []:
        if not isinstance(alert, dict):
            break
        alerts.append(
            AlertFacts(
                alertname=str(alert.get("alertname", "")),
                severity=str(alert.get("severity", "")),
                labels={str(k): str(v) for k, v in (alert.get("labels") or {}).items()},
            )
        )
    observed.add_alerts(alerts)


@dataclass(frozen=True)
class AlertmanagerActiveAlerts:
    client: AlertmanagerClient
    namespaces: NamespaceBound = ANYWHERE
    name: str = ACTIVE_ALERTS_TOOL
    description: str = (
        "Alerts firing now (not silenced), for a namespace and/or labels: counts by alert name"
        " and the newest alerts with their labels and summaries. Shows whether the incident is"
        " part of a wider storm."
    )
    arguments: type[AlertmanagerActiveAlertsArgs] = AlertmanagerActiveAlertsArgs

    @_guarded
    async def run(self, args: AlertmanagerActiveAlertsArgs, ctx: ToolContext) -> ToolResult:
        asked = args.namespace or args.labels.get("namespace")
        if asked:  # refused as the kubernetes tools refuse it
            try:
                self.namespaces.check(asked)
            except ScopeRefusal as refusal:
                return refused(refusal.message)
        summary = await self.client.active_alerts(
            args.labels,
            namespace=args.namespace,
            timeout=ctx.timeout,
            readable=self.namespaces.allows,
        )
        if ctx.observed is not None:
            record_alerts(ctx.observed, summary)
        return ToolResult(ToolCallStatus.SUCCESS, {AlertmanagerToolset.data_key: summary})


@dataclass(frozen=True)
class AlertmanagerToolsetSource:
    """Makes each investigation's `alertmanager` toolset."""

    client: AlertmanagerClient
    limits: ToolsetLimits
    namespaces: NamespaceBound = ANYWHERE  # the operator's lists

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        scope = self.namespaces.confined_to(caller.namespace)
        # Recorded: what the tool may show this caller (alerts of no namespace included).
        client = recorder.reading(self.client, scope.allows)
        return AlertmanagerToolset.toolset((AlertmanagerActiveAlerts(client, scope),), self.limits)
