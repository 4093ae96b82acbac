from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ParameterErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARAMETER_ERROR_CODE_UNSPECIFIED: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_MISSING: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_WRONG_TYPE: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_NOT_IN_ENUM: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_BELOW_MINIMUM: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_ABOVE_MAXIMUM: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_TOO_SHORT: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_TOO_LONG: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_PATTERN_MISMATCH: _ClassVar[ParameterErrorCode]
    PARAMETER_ERROR_CODE_MISSING_DEPENDENCY: _ClassVar[ParameterErrorCode]
PARAMETER_ERROR_CODE_UNSPECIFIED: ParameterErrorCode
PARAMETER_ERROR_CODE_MISSING: ParameterErrorCode
PARAMETER_ERROR_CODE_WRONG_TYPE: ParameterErrorCode
PARAMETER_ERROR_CODE_NOT_IN_ENUM: ParameterErrorCode
PARAMETER_ERROR_CODE_BELOW_MINIMUM: ParameterErrorCode
PARAMETER_ERROR_CODE_ABOVE_MAXIMUM: ParameterErrorCode
PARAMETER_ERROR_CODE_TOO_SHORT: ParameterErrorCode
PARAMETER_ERROR_CODE_TOO_LONG: ParameterErrorCode
PARAMETER_ERROR_CODE_PATTERN_MISMATCH: ParameterErrorCode
PARAMETER_ERROR_CODE_MISSING_DEPENDENCY: ParameterErrorCode

class ParameterError(_message.Message):
    __slots__ = ("parameter", "code", "message")
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    parameter: str
    code: ParameterErrorCode
    message: str
    def __init__(self, parameter: _Optional[str] = ..., code: _Optional[_Union[ParameterErrorCode, str]] = ..., message: _Optional[str] = ...) -> None: ...

class ParameterValidation(_message.Message):
    __slots__ = ("valid", "errors", "sanitized_parameters", "stripped_parameters")
    VALID_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    SANITIZED_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    STRIPPED_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    valid: bool
    errors: _containers.RepeatedCompositeFieldContainer[ParameterError]
    sanitized_parameters: _struct_pb2.Struct
    stripped_parameters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, valid: _Optional[bool] = ..., errors: _Optional[_Iterable[_Union[ParameterError, _Mapping]]] = ..., sanitized_parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., stripped_parameters: _Optional[_Iterable[str]] = ...) -> None: ...

class ValidateWorkflowParametersRequest(_message.Message):
    __slots__ = ("workflow_id", "parameters")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    parameters: _struct_pb2.Struct
    def __init__(self, workflow_id: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ValidateWorkflowParametersResponse(_message.Message):
    __slots__ = ("workflow_id", "workflow_version", "validation")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_VERSION_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    workflow_version: str
    validation: ParameterValidation
    def __init__(self, workflow_id: _Optional[str] = ..., workflow_version: _Optional[str] = ..., validation: _Optional[_Union[ParameterValidation, _Mapping]] = ...) -> None: ...
