import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from hapi.v1 import execution_pb2 as _execution_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RemediatedResource(_message.Message):
    __slots__ = ("namespace", "kind", "name", "api_group")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    kind: str
    name: str
    api_group: str
    def __init__(self, namespace: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., api_group: _Optional[str] = ...) -> None: ...

class RemediationSucceeded(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemediationDeclined(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ReportRemediationOutcomeRequest(_message.Message):
    __slots__ = ("remediation_id", "attempt", "target", "executed", "succeeded", "failed", "declined", "signal_cleared", "completed_at", "pre_remediation_spec_hash", "post_remediation_spec_hash")
    REMEDIATION_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    EXECUTED_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    DECLINED_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_CLEARED_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_FIELD_NUMBER: _ClassVar[int]
    PRE_REMEDIATION_SPEC_HASH_FIELD_NUMBER: _ClassVar[int]
    POST_REMEDIATION_SPEC_HASH_FIELD_NUMBER: _ClassVar[int]
    remediation_id: str
    attempt: int
    target: RemediatedResource
    executed: _execution_pb2.ExecutedWorkflow
    succeeded: RemediationSucceeded
    failed: _execution_pb2.ExecutionFailure
    declined: RemediationDeclined
    signal_cleared: bool
    completed_at: _timestamp_pb2.Timestamp
    pre_remediation_spec_hash: str
    post_remediation_spec_hash: str
    def __init__(self, remediation_id: _Optional[str] = ..., attempt: _Optional[int] = ..., target: _Optional[_Union[RemediatedResource, _Mapping]] = ..., executed: _Optional[_Union[_execution_pb2.ExecutedWorkflow, _Mapping]] = ..., succeeded: _Optional[_Union[RemediationSucceeded, _Mapping]] = ..., failed: _Optional[_Union[_execution_pb2.ExecutionFailure, _Mapping]] = ..., declined: _Optional[_Union[RemediationDeclined, _Mapping]] = ..., signal_cleared: _Optional[bool] = ..., completed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pre_remediation_spec_hash: _Optional[str] = ..., post_remediation_spec_hash: _Optional[str] = ...) -> None: ...

class ReportRemediationOutcomeResponse(_message.Message):
    __slots__ = ("already_recorded", "recorded_at", "decision_known")
    ALREADY_RECORDED_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    DECISION_KNOWN_FIELD_NUMBER: _ClassVar[int]
    already_recorded: bool
    recorded_at: _timestamp_pb2.Timestamp
    decision_known: bool
    def __init__(self, already_recorded: _Optional[bool] = ..., recorded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., decision_known: _Optional[bool] = ...) -> None: ...
