from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ToolCallStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_CALL_STATUS_UNSPECIFIED: _ClassVar[ToolCallStatus]
    TOOL_CALL_STATUS_SUCCESS: _ClassVar[ToolCallStatus]
    TOOL_CALL_STATUS_INVALID_ARGUMENTS: _ClassVar[ToolCallStatus]
    TOOL_CALL_STATUS_UNKNOWN_TOOL: _ClassVar[ToolCallStatus]
    TOOL_CALL_STATUS_ERROR: _ClassVar[ToolCallStatus]
    TOOL_CALL_STATUS_LIMIT_EXCEEDED: _ClassVar[ToolCallStatus]
    TOOL_CALL_STATUS_REPEATED: _ClassVar[ToolCallStatus]
    TOOL_CALL_STATUS_TIMEOUT: _ClassVar[ToolCallStatus]
TOOL_CALL_STATUS_UNSPECIFIED: ToolCallStatus
TOOL_CALL_STATUS_SUCCESS: ToolCallStatus
TOOL_CALL_STATUS_INVALID_ARGUMENTS: ToolCallStatus
TOOL_CALL_STATUS_UNKNOWN_TOOL: ToolCallStatus
TOOL_CALL_STATUS_ERROR: ToolCallStatus
TOOL_CALL_STATUS_LIMIT_EXCEEDED: ToolCallStatus
TOOL_CALL_STATUS_REPEATED: ToolCallStatus
TOOL_CALL_STATUS_TIMEOUT: ToolCallStatus

class SearchWorkflowCatalogArgs(_message.Message):
    __slots__ = ("query", "similarity_threshold", "limit", "signal_type", "severity", "component")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_TYPE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    query: str
    similarity_threshold: float
    limit: int
    signal_type: str
    severity: str
    component: str
    def __init__(self, query: _Optional[str] = ..., similarity_threshold: _Optional[float] = ..., limit: _Optional[int] = ..., signal_type: _Optional[str] = ..., severity: _Optional[str] = ..., component: _Optional[str] = ...) -> None: ...

class ValidateWorkflowParametersArgs(_message.Message):
    __slots__ = ("workflow_id", "parameters")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    parameters: _struct_pb2.Struct
    def __init__(self, workflow_id: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class KubernetesGetArgs(_message.Message):
    __slots__ = ("kind", "name", "namespace")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    name: str
    namespace: str
    def __init__(self, kind: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class KubernetesListArgs(_message.Message):
    __slots__ = ("kind", "namespace", "label_selector", "field_selector", "limit")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    namespace: str
    label_selector: str
    field_selector: str
    limit: int
    def __init__(self, kind: _Optional[str] = ..., namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., field_selector: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class KubernetesEventsArgs(_message.Message):
    __slots__ = ("namespace", "kind", "name", "limit")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    kind: str
    name: str
    limit: int
    def __init__(self, namespace: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class KubernetesPodLogsArgs(_message.Message):
    __slots__ = ("namespace", "pod", "container", "previous", "tail_lines", "filter", "since_seconds")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    POD_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    TAIL_LINES_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    SINCE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    pod: str
    container: str
    previous: bool
    tail_lines: int
    filter: str
    since_seconds: int
    def __init__(self, namespace: _Optional[str] = ..., pod: _Optional[str] = ..., container: _Optional[str] = ..., previous: _Optional[bool] = ..., tail_lines: _Optional[int] = ..., filter: _Optional[str] = ..., since_seconds: _Optional[int] = ...) -> None: ...

class KubernetesOwnerChainArgs(_message.Message):
    __slots__ = ("namespace", "kind", "name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    kind: str
    name: str
    def __init__(self, namespace: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class KubernetesNodeStatsArgs(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: str
    def __init__(self, node: _Optional[str] = ...) -> None: ...

class PrometheusQueryArgs(_message.Message):
    __slots__ = ("query", "time")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    query: str
    time: str
    def __init__(self, query: _Optional[str] = ..., time: _Optional[str] = ...) -> None: ...

class PrometheusRangeQueryArgs(_message.Message):
    __slots__ = ("query", "range", "end", "step")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RANGE_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    query: str
    range: str
    end: str
    step: str
    def __init__(self, query: _Optional[str] = ..., range: _Optional[str] = ..., end: _Optional[str] = ..., step: _Optional[str] = ...) -> None: ...

class PrometheusLabelValuesArgs(_message.Message):
    __slots__ = ("label", "match")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    label: str
    match: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, label: _Optional[str] = ..., match: _Optional[_Iterable[str]] = ...) -> None: ...

class PrometheusSeriesArgs(_message.Message):
    __slots__ = ("match",)
    MATCH_FIELD_NUMBER: _ClassVar[int]
    match: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, match: _Optional[_Iterable[str]] = ...) -> None: ...

class AlertmanagerActiveAlertsArgs(_message.Message):
    __slots__ = ("namespace", "labels")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    labels: _containers.ScalarMap[str, str]
    def __init__(self, namespace: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class McpToolCall(_message.Message):
    __slots__ = ("server", "tool", "arguments")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    server: str
    tool: str
    arguments: _struct_pb2.Struct
    def __init__(self, server: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolCallRecord(_message.Message):
    __slots__ = ("name", "search_workflow_catalog", "validate_workflow_parameters", "kubernetes_get", "kubernetes_list", "kubernetes_events", "kubernetes_pod_logs", "kubernetes_owner_chain", "prometheus_query", "prometheus_query_range", "prometheus_label_values", "prometheus_series", "alertmanager_active_alerts", "mcp_tool", "kubernetes_node_stats", "raw_arguments", "result", "status", "duration_seconds")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SEARCH_WORKFLOW_CATALOG_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_WORKFLOW_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_GET_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_LIST_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_EVENTS_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_POD_LOGS_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_OWNER_CHAIN_FIELD_NUMBER: _ClassVar[int]
    PROMETHEUS_QUERY_FIELD_NUMBER: _ClassVar[int]
    PROMETHEUS_QUERY_RANGE_FIELD_NUMBER: _ClassVar[int]
    PROMETHEUS_LABEL_VALUES_FIELD_NUMBER: _ClassVar[int]
    PROMETHEUS_SERIES_FIELD_NUMBER: _ClassVar[int]
    ALERTMANAGER_ACTIVE_ALERTS_FIELD_NUMBER: _ClassVar[int]
    MCP_TOOL_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_NODE_STATS_FIELD_NUMBER: _ClassVar[int]
    RAW_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    search_workflow_catalog: SearchWorkflowCatalogArgs
    validate_workflow_parameters: ValidateWorkflowParametersArgs
    kubernetes_get: KubernetesGetArgs
    kubernetes_list: KubernetesListArgs
    kubernetes_events: KubernetesEventsArgs
    kubernetes_pod_logs: KubernetesPodLogsArgs
    kubernetes_owner_chain: KubernetesOwnerChainArgs
    prometheus_query: PrometheusQueryArgs
    prometheus_query_range: PrometheusRangeQueryArgs
    prometheus_label_values: PrometheusLabelValuesArgs
    prometheus_series: PrometheusSeriesArgs
    alertmanager_active_alerts: AlertmanagerActiveAlertsArgs
    mcp_tool: McpToolCall
    kubernetes_node_stats: KubernetesNodeStatsArgs
    raw_arguments: str
    result: str
    status: ToolCallStatus
    duration_seconds: float
    def __init__(self, name: _Optional[str] = ..., search_workflow_catalog: _Optional[_Union[SearchWorkflowCatalogArgs, _Mapping]] = ..., validate_workflow_parameters: _Optional[_Union[ValidateWorkflowParametersArgs, _Mapping]] = ..., kubernetes_get: _Optional[_Union[KubernetesGetArgs, _Mapping]] = ..., kubernetes_list: _Optional[_Union[KubernetesListArgs, _Mapping]] = ..., kubernetes_events: _Optional[_Union[KubernetesEventsArgs, _Mapping]] = ..., kubernetes_pod_logs: _Optional[_Union[KubernetesPodLogsArgs, _Mapping]] = ..., kubernetes_owner_chain: _Optional[_Union[KubernetesOwnerChainArgs, _Mapping]] = ..., prometheus_query: _Optional[_Union[PrometheusQueryArgs, _Mapping]] = ..., prometheus_query_range: _Optional[_Union[PrometheusRangeQueryArgs, _Mapping]] = ..., prometheus_label_values: _Optional[_Union[PrometheusLabelValuesArgs, _Mapping]] = ..., prometheus_series: _Optional[_Union[PrometheusSeriesArgs, _Mapping]] = ..., alertmanager_active_alerts: _Optional[_Union[AlertmanagerActiveAlertsArgs, _Mapping]] = ..., mcp_tool: _Optional[_Union[McpToolCall, _Mapping]] = ..., kubernetes_node_stats: _Optional[_Union[KubernetesNodeStatsArgs, _Mapping]] = ..., raw_arguments: _Optional[str] = ..., result: _Optional[str] = ..., status: _Optional[_Union[ToolCallStatus, str]] = ..., duration_seconds: _Optional[float] = ...) -> None: ...
