"""A small async Python client for hapi.v1, with the server's request rules.

Design notes: docs/internals.md (`client.py`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

from hapi.v1 import service_pb2, service_pb2_grpc, validation_pb2
from hapi_grpc.domain.errors import FieldViolation, InvalidRequestError
from hapi_grpc.domain.parameters import validate_parameters  # re-exported for clients
from hapi_grpc.transport.interceptors import request_violations

DEFAULT_TIMEOUT = 330.0  # an investigation may take minutes; stay above its budget

__all__ = [
    "DEFAULT_TIMEOUT",
    "HapiClient",
    "check_request",
    "error_details",
    "load_analyze_request",
    "validate_parameters",
]


def check_request(message: Any) -> None:
    """Raise InvalidRequestError with field violations if `message` breaks the proto rules."""
    violations = request_violations(message)
    if violations:
        raise InvalidRequestError(
            "invalid request: " + "; ".join(f"{v.field}: {v.description}" for v in violations),
            violations,
        )


def load_analyze_request(path: str | Path) -> service_pb2.AnalyzeIncidentRequest:
    """An AnalyzeIncidentRequest from a JSON file (proto JSON mapping).

    Accepts `{"incident": {...}}` or the bare incident object.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    if "incident" not in data:
        data = {"incident": data}
    return json_format.ParseDict(data, service_pb2.AnalyzeIncidentRequest())


def error_details(error: grpc.aio.AioRpcError | grpc.RpcError) -> list[Any]:
    """The google.rpc details (BadRequest, ResourceInfo, ...) of a failed call."""
    metadata = error.trailing_metadata() or ()
    for key, value in metadata:
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out: list[Any] = []
            for detail in status.details:
                for cls in (error_details_pb2.BadRequest, error_details_pb2.ResourceInfo):
                    if detail.Is(cls.DESCRIPTOR):
                        msg = cls()
                        detail.Unpack(msg)
                        out.append(msg)
            return out
    return []


def field_violations(error: grpc.aio.AioRpcError | grpc.RpcError) -> list[FieldViolation]:
    """Field violations carried by an INVALID_ARGUMENT error."""
    return [
        FieldViolation(v.field, v.description, v.reason)
        for detail in error_details(error)
        if isinstance(detail, error_details_pb2.BadRequest)
        for v in detail.field_violations
    ]


class HapiClient:
    """Async client for IncidentAnalysisService."""

    def __init__(
        self,
        address: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
    ) -> None:
        self.timeout = timeout
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        if credentials is not None:
            self._channel = grpc.aio.secure_channel(address, credentials)
        else:
            self._channel = grpc.aio.insecure_channel(address)
        self.stub = service_pb2_grpc.IncidentAnalysisServiceStub(self._channel)

    async def __aenter__(self) -> HapiClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    async def analyze(
        self, request: service_pb2.AnalyzeIncidentRequest, *, timeout: float | None = None
    ) -> service_pb2.AnalyzeIncidentResponse:
        check_request(request)
        return await self.stub.AnalyzeIncident(
            request, timeout=timeout or self.timeout, metadata=self._metadata
        )

    async def analyze_stream(
        self, request: service_pb2.AnalyzeIncidentRequest, *, timeout: float | None = None
    ) -> AsyncIterator[service_pb2.AnalyzeIncidentStreamResponse]:
        stream_request = service_pb2.AnalyzeIncidentStreamRequest(incident=request.incident)
        check_request(stream_request)
        call = self.stub.AnalyzeIncidentStream(
            stream_request, timeout=timeout or self.timeout, metadata=self._metadata
        )
        async for event in call:
            yield event

    async def validate(
        self,
        workflow_id: str,
        parameters: Mapping[str, Any],
        *,
        timeout: float | None = None,
    ) -> validation_pb2.ValidateWorkflowParametersResponse:
        request = validation_pb2.ValidateWorkflowParametersRequest(workflow_id=workflow_id)
        request.parameters.update(dict(parameters))
        check_request(request)
        return await self.stub.ValidateWorkflowParameters(
            request, timeout=30.0 if timeout is None else timeout, metadata=self._metadata
        )
