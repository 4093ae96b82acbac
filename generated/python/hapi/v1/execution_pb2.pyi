import datetime

from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecutedWorkflow(_message.Message):
    __slots__ = ("workflow_id", "version", "parameters")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    version: str
    parameters: _struct_pb2.Struct
    def __init__(self, workflow_id: _Optional[str] = ..., version: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ExecutionFailure(_message.Message):
    __slots__ = ("failed_step_index", "failed_step_name", "reason", "message", "exit_code", "failed_at", "execution_time")
    FAILED_STEP_INDEX_FIELD_NUMBER: _ClassVar[int]
    FAILED_STEP_NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_FIELD_NUMBER: _ClassVar[int]
    failed_step_index: int
    failed_step_name: str
    reason: str
    message: str
    exit_code: int
    failed_at: _timestamp_pb2.Timestamp
    execution_time: _duration_pb2.Duration
    def __init__(self, failed_step_index: _Optional[int] = ..., failed_step_name: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., exit_code: _Optional[int] = ..., failed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., execution_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...
