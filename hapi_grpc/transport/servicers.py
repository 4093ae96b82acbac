"""The thin servicer: who asks and until when, the request converted, one
application call, the answer converted back.

Design notes: docs/internals.md (`transport/servicers.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from hapi.v1 import outcome_pb2, service_pb2, service_pb2_grpc, validation_pb2
from hapi.v1.service_pb2 import AnalyzeIncidentStreamResponse as StreamResponse
from hapi_grpc.application.service import Application
from hapi_grpc.domain.deadline import Budget
from hapi_grpc.security.auth import identity_of
from hapi_grpc.security.authorization import CallerPolicy
from hapi_grpc.transport import converters, recovery_converters

__all__ = ["IncidentAnalysisServicer", "caller_budget"]


def caller_budget(context: grpc.aio.ServicerContext) -> Budget:
    """The caller's deadline as the domain's time budget (unbounded if none)."""
    return Budget.from_timeout(context.time_remaining())


class IncidentAnalysisServicer(service_pb2_grpc.IncidentAnalysisServiceServicer):
    def __init__(self, application: Application[StreamResponse], callers: CallerPolicy) -> None:
        self._app = application
        self._callers = callers

    async def AnalyzeIncident(
        self, request: service_pb2.AnalyzeIncidentRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.AnalyzeIncidentResponse:
        budget = caller_budget(context)
        namespace = request.incident.signal.namespace
        caller = await self._callers.investigating(identity_of(context), namespace, budget)
        incident = converters.incident_from_proto(request.incident)
        answer = await self._app.analyze(incident, caller, budget, request.force_reanalysis)
        return service_pb2.AnalyzeIncidentResponse(result=answer.result)

    async def AnalyzeIncidentStream(
        self, request: service_pb2.AnalyzeIncidentStreamRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[StreamResponse]:
        budget = caller_budget(context)
        namespace = request.incident.signal.namespace
        caller = await self._callers.investigating(identity_of(context), namespace, budget)
        incident = converters.incident_from_proto(request.incident)
        messages = self._app.analyze_stream(incident, caller, budget, request.force_reanalysis)
        # Closed as soon as this stream is: the investigation is left at once.
        async with contextlib.aclosing(messages):
            async for message in messages:
                yield message

    async def ValidateWorkflowParameters(
        self,
        request: validation_pb2.ValidateWorkflowParametersRequest,
        context: grpc.aio.ServicerContext,
    ) -> validation_pb2.ValidateWorkflowParametersResponse:
        schema, outcome = await self._app.validate(
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
        budget = caller_budget(context)
        namespace = request.target.namespace
        caller = await self._callers.reporting(identity_of(context), namespace, budget)
        report = recovery_converters.report_from_proto(request, caller.name)
        return recovery_converters.ack_to_proto(await self._app.report(report, budget))
