"""Thin servicers: convert the request, call the application layer, convert back.

No business logic lives here: what an RPC does is in `hapi_grpc.application`.
Request rules are enforced before these run, and exceptions are mapped to
status codes after, by ServicePolicyInterceptor.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from hapi.v1 import outcome_pb2, service_pb2, service_pb2_grpc, validation_pb2
from hapi.v1.service_pb2 import AnalyzeIncidentStreamResponse as StreamResponse
from hapi_grpc.application.analysis import AnalysisService
from hapi_grpc.application.outcomes import OutcomeService
from hapi_grpc.application.validation import ParameterValidation
from hapi_grpc.domain.deadline import Budget
from hapi_grpc.security.auth import current_identity
from hapi_grpc.transport import converters, outcome_messages


def caller_budget(context: grpc.aio.ServicerContext) -> Budget:
    """The caller's deadline as the domain's time budget (unbounded if none)."""
    return Budget.from_timeout(context.time_remaining())


def caller_name() -> str:
    """The authenticated caller's user name; "" without authentication."""
    identity = current_identity()
    return identity.subject if identity is not None else ""


class IncidentAnalysisServicer(service_pb2_grpc.IncidentAnalysisServiceServicer):
    def __init__(
        self,
        analysis: AnalysisService[StreamResponse],
        validation: ParameterValidation,
        outcomes: OutcomeService,
    ) -> None:
        self._analysis = analysis
        self._validation = validation
        self._outcomes = outcomes

    async def AnalyzeIncident(
        self, request: service_pb2.AnalyzeIncidentRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.AnalyzeIncidentResponse:
        incident = converters.incident_from_proto(request.incident)
        answer = await self._analysis.analyze(
            incident, request.force_reanalysis, caller_budget(context), caller_name()
        )
        return service_pb2.AnalyzeIncidentResponse(result=answer.result)

    async def AnalyzeIncidentStream(
        self, request: service_pb2.AnalyzeIncidentStreamRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[StreamResponse]:
        incident = converters.incident_from_proto(request.incident)
        messages = self._analysis.stream(
            incident, request.force_reanalysis, caller_budget(context), caller_name()
        )
        # Closed as soon as this stream is: the investigation is left at once.
        async with contextlib.aclosing(messages):
            async for message in messages:
                yield message

    async def ValidateWorkflowParameters(
        self,
        request: validation_pb2.ValidateWorkflowParametersRequest,
        context: grpc.aio.ServicerContext,
    ) -> validation_pb2.ValidateWorkflowParametersResponse:
        schema, outcome = await self._validation.validate(
            request.workflow_id,
            converters.struct_to_dict(request.parameters),
            caller_budget(context),
        )
        return converters.validation_response(schema, outcome, request.parameters)

    async def ReportRemediationOutcome(
        self,
        request: outcome_pb2.ReportRemediationOutcomeRequest,
        context: grpc.aio.ServicerContext,
    ) -> outcome_pb2.ReportRemediationOutcomeResponse:
        report = outcome_messages.report_from_proto(request, caller_name())
        ack = await self._outcomes.report(report, caller_budget(context))
        return outcome_messages.ack_to_proto(ack)


__all__ = ["IncidentAnalysisServicer", "caller_budget", "caller_name"]
