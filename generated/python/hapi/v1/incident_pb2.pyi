import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from hapi.v1 import common_pb2 as _common_pb2
from hapi.v1 import recovery_pb2 as _recovery_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Incident(_message.Message):
    __slots__ = ("remediation_id", "incident_id", "signal", "error_details", "deduplication", "storm", "cluster", "business", "enrichment_results", "recovery")
    REMEDIATION_ID_FIELD_NUMBER: _ClassVar[int]
    INCIDENT_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAILS_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATION_FIELD_NUMBER: _ClassVar[int]
    STORM_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    BUSINESS_FIELD_NUMBER: _ClassVar[int]
    ENRICHMENT_RESULTS_FIELD_NUMBER: _ClassVar[int]
    RECOVERY_FIELD_NUMBER: _ClassVar[int]
    remediation_id: str
    incident_id: str
    signal: SignalInfo
    error_details: ErrorDetails
    deduplication: DeduplicationContext
    storm: StormDetection
    cluster: ClusterContext
    business: BusinessContext
    enrichment_results: EnrichmentResults
    recovery: _recovery_pb2.RecoveryContext
    def __init__(self, remediation_id: _Optional[str] = ..., incident_id: _Optional[str] = ..., signal: _Optional[_Union[SignalInfo, _Mapping]] = ..., error_details: _Optional[_Union[ErrorDetails, _Mapping]] = ..., deduplication: _Optional[_Union[DeduplicationContext, _Mapping]] = ..., storm: _Optional[_Union[StormDetection, _Mapping]] = ..., cluster: _Optional[_Union[ClusterContext, _Mapping]] = ..., business: _Optional[_Union[BusinessContext, _Mapping]] = ..., enrichment_results: _Optional[_Union[EnrichmentResults, _Mapping]] = ..., recovery: _Optional[_Union[_recovery_pb2.RecoveryContext, _Mapping]] = ...) -> None: ...

class SignalInfo(_message.Message):
    __slots__ = ("signal_type", "severity", "component", "alert_name", "namespace", "resource_kind", "resource_name")
    SIGNAL_TYPE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    ALERT_NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    signal_type: str
    severity: _common_pb2.Severity
    component: str
    alert_name: str
    namespace: str
    resource_kind: str
    resource_name: str
    def __init__(self, signal_type: _Optional[str] = ..., severity: _Optional[_Union[_common_pb2.Severity, str]] = ..., component: _Optional[str] = ..., alert_name: _Optional[str] = ..., namespace: _Optional[str] = ..., resource_kind: _Optional[str] = ..., resource_name: _Optional[str] = ...) -> None: ...

class ErrorDetails(_message.Message):
    __slots__ = ("error_message", "description", "firing_time", "received_time")
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FIRING_TIME_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_TIME_FIELD_NUMBER: _ClassVar[int]
    error_message: str
    description: str
    firing_time: _timestamp_pb2.Timestamp
    received_time: _timestamp_pb2.Timestamp
    def __init__(self, error_message: _Optional[str] = ..., description: _Optional[str] = ..., firing_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., received_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DeduplicationContext(_message.Message):
    __slots__ = ("is_duplicate", "first_seen", "last_seen", "occurrence_count", "previous_remediation_ref")
    IS_DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCE_COUNT_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_REMEDIATION_REF_FIELD_NUMBER: _ClassVar[int]
    is_duplicate: bool
    first_seen: _timestamp_pb2.Timestamp
    last_seen: _timestamp_pb2.Timestamp
    occurrence_count: int
    previous_remediation_ref: str
    def __init__(self, is_duplicate: _Optional[bool] = ..., first_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., occurrence_count: _Optional[int] = ..., previous_remediation_ref: _Optional[str] = ...) -> None: ...

class StormDetection(_message.Message):
    __slots__ = ("is_storm", "storm_type", "storm_window", "storm_alert_count", "affected_resources")
    IS_STORM_FIELD_NUMBER: _ClassVar[int]
    STORM_TYPE_FIELD_NUMBER: _ClassVar[int]
    STORM_WINDOW_FIELD_NUMBER: _ClassVar[int]
    STORM_ALERT_COUNT_FIELD_NUMBER: _ClassVar[int]
    AFFECTED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    is_storm: bool
    storm_type: str
    storm_window: str
    storm_alert_count: int
    affected_resources: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, is_storm: _Optional[bool] = ..., storm_type: _Optional[str] = ..., storm_window: _Optional[str] = ..., storm_alert_count: _Optional[int] = ..., affected_resources: _Optional[_Iterable[str]] = ...) -> None: ...

class ClusterContext(_message.Message):
    __slots__ = ("cluster_name", "signal_source", "signal_labels")
    class SignalLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_SOURCE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_LABELS_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    signal_source: str
    signal_labels: _containers.ScalarMap[str, str]
    def __init__(self, cluster_name: _Optional[str] = ..., signal_source: _Optional[str] = ..., signal_labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class BusinessContext(_message.Message):
    __slots__ = ("environment", "priority", "business_category", "risk_tolerance")
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    BUSINESS_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    RISK_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    environment: str
    priority: str
    business_category: str
    risk_tolerance: _common_pb2.RiskLevel
    def __init__(self, environment: _Optional[str] = ..., priority: _Optional[str] = ..., business_category: _Optional[str] = ..., risk_tolerance: _Optional[_Union[_common_pb2.RiskLevel, str]] = ...) -> None: ...

class EnrichmentResults(_message.Message):
    __slots__ = ("custom_labels", "detected_labels")
    class CustomLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.ListValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.ListValue, _Mapping]] = ...) -> None: ...
    CUSTOM_LABELS_FIELD_NUMBER: _ClassVar[int]
    DETECTED_LABELS_FIELD_NUMBER: _ClassVar[int]
    custom_labels: _containers.MessageMap[str, _struct_pb2.ListValue]
    detected_labels: _struct_pb2.Struct
    def __init__(self, custom_labels: _Optional[_Mapping[str, _struct_pb2.ListValue]] = ..., detected_labels: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
