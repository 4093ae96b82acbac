from buf.validate import validate_pb2 as _validate_pb2
from hapi.v1 import analysis_pb2 as _analysis_pb2
from hapi.v1 import incident_pb2 as _incident_pb2
from hapi.v1 import outcome_pb2 as _outcome_pb2
from hapi.v1 import tools_pb2 as _tools_pb2
from hapi.v1 import validation_pb2 as _validation_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AnalyzeIncidentRequest(_message.Message):
    __slots__ = ("incident", "force_reanalysis")
    INCIDENT_FIELD_NUMBER: _ClassVar[int]
    FORCE_REANALYSIS_FIELD_NUMBER: _ClassVar[int]
    incident: _incident_pb2.Incident
    force_reanalysis: bool
    def __init__(self, incident: _Optional[_Union[_incident_pb2.Incident, _Mapping]] = ..., force_reanalysis: _Optional[bool] = ...) -> None: ...

class AnalyzeIncidentResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _analysis_pb2.AnalysisResult
    def __init__(self, result: _Optional[_Union[_analysis_pb2.AnalysisResult, _Mapping]] = ...) -> None: ...

class AnalyzeIncidentStreamRequest(_message.Message):
    __slots__ = ("incident", "force_reanalysis")
    INCIDENT_FIELD_NUMBER: _ClassVar[int]
    FORCE_REANALYSIS_FIELD_NUMBER: _ClassVar[int]
    incident: _incident_pb2.Incident
    force_reanalysis: bool
    def __init__(self, incident: _Optional[_Union[_incident_pb2.Incident, _Mapping]] = ..., force_reanalysis: _Optional[bool] = ...) -> None: ...

class AnalyzeIncidentStreamResponse(_message.Message):
    __slots__ = ("llm_turn", "tool_call", "validation_attempt", "result")
    LLM_TURN_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    llm_turn: _analysis_pb2.LlmTurn
    tool_call: _tools_pb2.ToolCallRecord
    validation_attempt: _analysis_pb2.ValidationAttempt
    result: _analysis_pb2.AnalysisResult
    def __init__(self, llm_turn: _Optional[_Union[_analysis_pb2.LlmTurn, _Mapping]] = ..., tool_call: _Optional[_Union[_tools_pb2.ToolCallRecord, _Mapping]] = ..., validation_attempt: _Optional[_Union[_analysis_pb2.ValidationAttempt, _Mapping]] = ..., result: _Optional[_Union[_analysis_pb2.AnalysisResult, _Mapping]] = ...) -> None: ...
