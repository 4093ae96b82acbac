from buf.validate import validate_pb2 as _validate_pb2
from hapi.v1 import common_pb2 as _common_pb2
from hapi.v1 import execution_pb2 as _execution_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RecoveryContext(_message.Message):
    __slots__ = ("attempt_number", "max_attempts", "previous_executions")
    ATTEMPT_NUMBER_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    attempt_number: int
    max_attempts: int
    previous_executions: _containers.RepeatedCompositeFieldContainer[PreviousExecution]
    def __init__(self, attempt_number: _Optional[int] = ..., max_attempts: _Optional[int] = ..., previous_executions: _Optional[_Iterable[_Union[PreviousExecution, _Mapping]]] = ...) -> None: ...

class PreviousExecution(_message.Message):
    __slots__ = ("workflow", "rationale", "original_analysis", "failure", "execution_ref", "engine_summary")
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    RATIONALE_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_REF_FIELD_NUMBER: _ClassVar[int]
    ENGINE_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    workflow: _execution_pb2.ExecutedWorkflow
    rationale: str
    original_analysis: OriginalAnalysis
    failure: _execution_pb2.ExecutionFailure
    execution_ref: str
    engine_summary: str
    def __init__(self, workflow: _Optional[_Union[_execution_pb2.ExecutedWorkflow, _Mapping]] = ..., rationale: _Optional[str] = ..., original_analysis: _Optional[_Union[OriginalAnalysis, _Mapping]] = ..., failure: _Optional[_Union[_execution_pb2.ExecutionFailure, _Mapping]] = ..., execution_ref: _Optional[str] = ..., engine_summary: _Optional[str] = ...) -> None: ...

class OriginalAnalysis(_message.Message):
    __slots__ = ("summary", "signal_type", "severity", "contributing_factors")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_TYPE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTING_FACTORS_FIELD_NUMBER: _ClassVar[int]
    summary: str
    signal_type: str
    severity: _common_pb2.Severity
    contributing_factors: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, summary: _Optional[str] = ..., signal_type: _Optional[str] = ..., severity: _Optional[_Union[_common_pb2.Severity, str]] = ..., contributing_factors: _Optional[_Iterable[str]] = ...) -> None: ...
