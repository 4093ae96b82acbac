"""Our tools' arguments as their typed `tools.proto` messages, for `ToolCallRecord`.

The record carries the raw argument text in every case; the typed message is
a convenience for callers, filled when the arguments fit it (best effort).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from hapi.v1 import tools_pb2
from hapi_grpc.domain.toolsets.jsontext import canonical_json
from hapi_grpc.transport.json_values import json_safe

__all__ = ["typed_arguments", "typed_tool"]

_TOOL_ARGS: dict[str, tuple[str, type[Message]]] = {
    "search_workflow_catalog": ("search_workflow_catalog", tools_pb2.SearchWorkflowCatalogArgs),
    "validate_workflow_parameters": (
        "validate_workflow_parameters",
        tools_pb2.ValidateWorkflowParametersArgs,
    ),
    "kubernetes_get": ("kubernetes_get", tools_pb2.KubernetesGetArgs),
    "kubernetes_list": ("kubernetes_list", tools_pb2.KubernetesListArgs),
    "kubernetes_events": ("kubernetes_events", tools_pb2.KubernetesEventsArgs),
    "kubernetes_pod_logs": ("kubernetes_pod_logs", tools_pb2.KubernetesPodLogsArgs),
    "kubernetes_owner_chain": ("kubernetes_owner_chain", tools_pb2.KubernetesOwnerChainArgs),
    "prometheus_query": ("prometheus_query", tools_pb2.PrometheusQueryArgs),
    "prometheus_query_range": ("prometheus_query_range", tools_pb2.PrometheusRangeQueryArgs),
    "prometheus_label_values": ("prometheus_label_values", tools_pb2.PrometheusLabelValuesArgs),
    "prometheus_series": ("prometheus_series", tools_pb2.PrometheusSeriesArgs),
    "alertmanager_active_alerts": (
        "alertmanager_active_alerts",
        tools_pb2.AlertmanagerActiveAlertsArgs,
    ),
}


def typed_tool(name: str) -> str | None:
    """The `ToolCallRecord` field holding the typed arguments of tool `name`, if it has one."""
    typed = _TOOL_ARGS.get(name)
    return typed[0] if typed is not None else None


# Typed arguments of recent tool calls, by tool and canonical argument JSON:
# json_format is slow, and a storm's investigations make the same calls.
# The messages are only copied from, never changed. Only short argument texts
# are remembered (a call may carry up to 64 kB), so this holds at most ~1 MB.
_TYPED_ARGUMENTS: dict[tuple[str, str], Message | None] = {}
_TYPED_ARGUMENTS_KEPT = 256
_REMEMBERED_ARGUMENT_CHARS = 2048


def typed_arguments(name: str, arguments: dict[str, Any]) -> Message | None:
    """The arguments of a call to our tool `name` as its message; None if they do not fit."""
    cls = _TOOL_ARGS[name][1]
    key = (name, canonical_json(arguments))
    if key in _TYPED_ARGUMENTS:
        return _TYPED_ARGUMENTS[key]
    args: Message | None
    try:
        args = json_format.ParseDict(json_safe(arguments), cls(), ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError):
        args = None
    if len(key[1]) <= _REMEMBERED_ARGUMENT_CHARS:
        if len(_TYPED_ARGUMENTS) >= _TYPED_ARGUMENTS_KEPT:
            del _TYPED_ARGUMENTS[next(iter(_TYPED_ARGUMENTS))]  # the oldest
        _TYPED_ARGUMENTS[key] = args
    return args
