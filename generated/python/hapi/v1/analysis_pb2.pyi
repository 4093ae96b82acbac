import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from hapi.v1 import common_pb2 as _common_pb2
from hapi.v1 import tools_pb2 as _tools_pb2
from hapi.v1 import validation_pb2 as _validation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HumanReviewReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HUMAN_REVIEW_REASON_UNSPECIFIED: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_NO_MATCHING_WORKFLOWS: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_WORKFLOW_NOT_FOUND: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_PARAMETER_VALIDATION_FAILED: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_LOW_CONFIDENCE: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_LLM_OUTPUT_UNPARSEABLE: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_INVESTIGATION_INCONCLUSIVE: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_DATA_STORAGE_UNAVAILABLE: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_LLM_UNAVAILABLE: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_BUDGET_EXHAUSTED: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_CONTEXT_WINDOW_EXCEEDED: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_POLICY_REQUIRES_REVIEW: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_RECOVERY_ATTEMPTS_EXHAUSTED: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION: _ClassVar[HumanReviewReason]
    HUMAN_REVIEW_REASON_RECURRING_REMEDIATION: _ClassVar[HumanReviewReason]

class ValidationSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VALIDATION_SOURCE_UNSPECIFIED: _ClassVar[ValidationSource]
    VALIDATION_SOURCE_TOOL: _ClassVar[ValidationSource]
    VALIDATION_SOURCE_FINAL_ANSWER: _ClassVar[ValidationSource]
HUMAN_REVIEW_REASON_UNSPECIFIED: HumanReviewReason
HUMAN_REVIEW_REASON_NO_MATCHING_WORKFLOWS: HumanReviewReason
HUMAN_REVIEW_REASON_WORKFLOW_NOT_FOUND: HumanReviewReason
HUMAN_REVIEW_REASON_PARAMETER_VALIDATION_FAILED: HumanReviewReason
HUMAN_REVIEW_REASON_LOW_CONFIDENCE: HumanReviewReason
HUMAN_REVIEW_REASON_LLM_OUTPUT_UNPARSEABLE: HumanReviewReason
HUMAN_REVIEW_REASON_INVESTIGATION_INCONCLUSIVE: HumanReviewReason
HUMAN_REVIEW_REASON_DATA_STORAGE_UNAVAILABLE: HumanReviewReason
HUMAN_REVIEW_REASON_LLM_UNAVAILABLE: HumanReviewReason
HUMAN_REVIEW_REASON_BUDGET_EXHAUSTED: HumanReviewReason
HUMAN_REVIEW_REASON_CONTEXT_WINDOW_EXCEEDED: HumanReviewReason
HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET: HumanReviewReason
HUMAN_REVIEW_REASON_POLICY_REQUIRES_REVIEW: HumanReviewReason
HUMAN_REVIEW_REASON_RECOVERY_ATTEMPTS_EXHAUSTED: HumanReviewReason
HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION: HumanReviewReason
HUMAN_REVIEW_REASON_RECURRING_REMEDIATION: HumanReviewReason
VALIDATION_SOURCE_UNSPECIFIED: ValidationSource
VALIDATION_SOURCE_TOOL: ValidationSource
VALIDATION_SOURCE_FINAL_ANSWER: ValidationSource

class TargetResource(_message.Message):
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

class SelectedWorkflow(_message.Message):
    __slots__ = ("workflow_id", "version", "confidence", "rationale", "estimated_risk", "parameters", "action_type")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    RATIONALE_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_RISK_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    ACTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    version: str
    confidence: float
    rationale: str
    estimated_risk: _common_pb2.RiskLevel
    parameters: _struct_pb2.Struct
    action_type: str
    def __init__(self, workflow_id: _Optional[str] = ..., version: _Optional[str] = ..., confidence: _Optional[float] = ..., rationale: _Optional[str] = ..., estimated_risk: _Optional[_Union[_common_pb2.RiskLevel, str]] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., action_type: _Optional[str] = ...) -> None: ...

class AlternativeWorkflow(_message.Message):
    __slots__ = ("workflow_id", "confidence", "rationale", "action_type")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    RATIONALE_FIELD_NUMBER: _ClassVar[int]
    ACTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    confidence: float
    rationale: str
    action_type: str
    def __init__(self, workflow_id: _Optional[str] = ..., confidence: _Optional[float] = ..., rationale: _Optional[str] = ..., action_type: _Optional[str] = ...) -> None: ...

class ContextUsed(_message.Message):
    __slots__ = ("cluster_state", "resource_availability", "blast_radius")
    CLUSTER_STATE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_AVAILABILITY_FIELD_NUMBER: _ClassVar[int]
    BLAST_RADIUS_FIELD_NUMBER: _ClassVar[int]
    cluster_state: str
    resource_availability: str
    blast_radius: str
    def __init__(self, cluster_state: _Optional[str] = ..., resource_availability: _Optional[str] = ..., blast_radius: _Optional[str] = ...) -> None: ...

class ValidationAttempt(_message.Message):
    __slots__ = ("attempt", "workflow_id", "parameters", "errors", "valid", "source")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    workflow_id: str
    parameters: _struct_pb2.Struct
    errors: _containers.RepeatedCompositeFieldContainer[_validation_pb2.ParameterError]
    valid: bool
    source: ValidationSource
    def __init__(self, attempt: _Optional[int] = ..., workflow_id: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., errors: _Optional[_Iterable[_Union[_validation_pb2.ParameterError, _Mapping]]] = ..., valid: _Optional[bool] = ..., source: _Optional[_Union[ValidationSource, str]] = ...) -> None: ...

class TokenUsage(_message.Message):
    __slots__ = ("prompt_tokens", "completion_tokens")
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    prompt_tokens: int
    completion_tokens: int
    def __init__(self, prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ...) -> None: ...

class AnalysisResult(_message.Message):
    __slots__ = ("remediation_id", "incident_id", "analysis_summary", "root_cause_assessment", "rca_severity", "target_resource", "selected_workflow", "alternative_workflows", "warnings", "context_used", "needs_human_review", "human_review_reason", "validation_attempts", "tool_calls", "model", "language_model_used", "token_usage", "llm_turns", "duration_seconds", "reused", "completed_at")
    REMEDIATION_ID_FIELD_NUMBER: _ClassVar[int]
    INCIDENT_ID_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ROOT_CAUSE_ASSESSMENT_FIELD_NUMBER: _ClassVar[int]
    RCA_SEVERITY_FIELD_NUMBER: _ClassVar[int]
    TARGET_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    SELECTED_WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    ALTERNATIVE_WORKFLOWS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_USED_FIELD_NUMBER: _ClassVar[int]
    NEEDS_HUMAN_REVIEW_FIELD_NUMBER: _ClassVar[int]
    HUMAN_REVIEW_REASON_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_MODEL_USED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_USAGE_FIELD_NUMBER: _ClassVar[int]
    LLM_TURNS_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REUSED_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_FIELD_NUMBER: _ClassVar[int]
    remediation_id: str
    incident_id: str
    analysis_summary: str
    root_cause_assessment: str
    rca_severity: _common_pb2.Severity
    target_resource: TargetResource
    selected_workflow: SelectedWorkflow
    alternative_workflows: _containers.RepeatedCompositeFieldContainer[AlternativeWorkflow]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    context_used: ContextUsed
    needs_human_review: bool
    human_review_reason: HumanReviewReason
    validation_attempts: _containers.RepeatedCompositeFieldContainer[ValidationAttempt]
    tool_calls: _containers.RepeatedCompositeFieldContainer[_tools_pb2.ToolCallRecord]
    model: str
    language_model_used: bool
    token_usage: TokenUsage
    llm_turns: int
    duration_seconds: float
    reused: bool
    completed_at: _timestamp_pb2.Timestamp
    def __init__(self, remediation_id: _Optional[str] = ..., incident_id: _Optional[str] = ..., analysis_summary: _Optional[str] = ..., root_cause_assessment: _Optional[str] = ..., rca_severity: _Optional[_Union[_common_pb2.Severity, str]] = ..., target_resource: _Optional[_Union[TargetResource, _Mapping]] = ..., selected_workflow: _Optional[_Union[SelectedWorkflow, _Mapping]] = ..., alternative_workflows: _Optional[_Iterable[_Union[AlternativeWorkflow, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ..., context_used: _Optional[_Union[ContextUsed, _Mapping]] = ..., needs_human_review: _Optional[bool] = ..., human_review_reason: _Optional[_Union[HumanReviewReason, str]] = ..., validation_attempts: _Optional[_Iterable[_Union[ValidationAttempt, _Mapping]]] = ..., tool_calls: _Optional[_Iterable[_Union[_tools_pb2.ToolCallRecord, _Mapping]]] = ..., model: _Optional[str] = ..., language_model_used: _Optional[bool] = ..., token_usage: _Optional[_Union[TokenUsage, _Mapping]] = ..., llm_turns: _Optional[int] = ..., duration_seconds: _Optional[float] = ..., reused: _Optional[bool] = ..., completed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LlmTurn(_message.Message):
    __slots__ = ("turn", "content", "tool_calls", "token_usage")
    TURN_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_USAGE_FIELD_NUMBER: _ClassVar[int]
    turn: int
    content: str
    tool_calls: _containers.RepeatedScalarFieldContainer[str]
    token_usage: TokenUsage
    def __init__(self, turn: _Optional[int] = ..., content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[str]] = ..., token_usage: _Optional[_Union[TokenUsage, _Mapping]] = ...) -> None: ...
