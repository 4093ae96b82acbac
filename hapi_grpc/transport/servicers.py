"""Thin servicers: convert proto -> domain, await the domain, convert back.

No business logic lives here. Request rules are enforced before these run,
and exceptions are mapped to status codes after, by ServicePolicyInterceptor.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import zlib
from collections.abc import AsyncIterator, Callable

import grpc
from google.protobuf import proto
from google.protobuf.message import Message

from hapi.v1 import analysis_pb2, service_pb2, service_pb2_grpc, validation_pb2
from hapi_grpc.domain import result as r
from hapi_grpc.domain.catalog import WorkflowCatalog
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.idempotency import (
    REUSE_KINDS,
    Finished,
    IdempotencyCoordinator,
    incident_fingerprint,
    worth_keeping,
)
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.engine import EventSink, InvestigationEngine
from hapi_grpc.domain.workflow_validation import validate_workflow_parameters
from hapi_grpc.observability import metrics
from hapi_grpc.observability.logging import log_context
from hapi_grpc.transport import converters

# Counters of the RPC's verdicts, resolved once: `labels()` locks on every call.
_RPC_VALIDATIONS = {
    valid: metrics.VALIDATION_ATTEMPTS.labels(source="rpc", result="valid" if valid else "invalid")
    for valid in (True, False)
}
_REUSED = {kind: metrics.ANALYSES_REUSED.labels(kind=kind) for kind in REUSE_KINDS}


def caller_budget(context: grpc.aio.ServicerContext) -> contextlib.AbstractContextManager[Budget]:
    """The caller's deadline as the domain's time budget (unbounded if none)."""
    return budget_scope(Budget.from_timeout(context.time_remaining()))


class IncidentAnalysisServicer(service_pb2_grpc.IncidentAnalysisServiceServicer):
    def __init__(
        self,
        engine: InvestigationEngine,
        catalog: WorkflowCatalog,
        idempotency: IdempotencyCoordinator[r.AnalysisEvent] | None = None,
    ) -> None:
        self._engine = engine
        self._catalog = catalog
        # Without a store: concurrent calls on this server still share one investigation.
        self._idempotency = idempotency or IdempotencyCoordinator()

    async def AnalyzeIncident(
        self, request: service_pb2.AnalyzeIncidentRequest, context: grpc.aio.ServicerContext
    ) -> service_pb2.AnalyzeIncidentResponse:
        incident = converters.incident_from_proto(request.incident)
        with (
            log_context(remediation_id=incident.remediation_id, incident_id=incident.incident_id),
            caller_budget(context),
        ):
            result, _ = await self._analyze(incident, request.force_reanalysis)
        return service_pb2.AnalyzeIncidentResponse(result=result)

    async def AnalyzeIncidentStream(
        self, request: service_pb2.AnalyzeIncidentStreamRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[service_pb2.AnalyzeIncidentStreamResponse]:
        incident = converters.incident_from_proto(request.incident)
        # Unbounded, but an investigation's events are bounded by its turn and
        # tool-call caps; a shared investigation never waits for a slow reader.
        queue: asyncio.Queue[r.AnalysisEvent] = asyncio.Queue()

        # The task copies the log context and the budget when it is created.
        # They are not held across the yields below: a generator the client
        # abandons is closed from another context, where resetting them fails.
        with (
            log_context(remediation_id=incident.remediation_id, incident_id=incident.incident_id),
            caller_budget(context),
        ):
            task = asyncio.create_task(
                self._analyze(incident, request.force_reanalysis, on_event=queue.put_nowait)
            )
        getter: asyncio.Future[r.AnalysisEvent] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield _event_to_proto(getter.result())
                    continue
                getter.cancel()
                # The investigation ended: drain what it queued, replay what
                # happened elsewhere (a kept result, another replica), then the result.
                while not queue.empty():
                    yield _event_to_proto(queue.get_nowait())
                result, replay = task.result()
                for frame in replay:
                    yield frame
                yield service_pb2.AnalyzeIncidentStreamResponse(result=result)
                return
        finally:
            if getter is not None:
                getter.cancel()
            # Client gone or deadline hit: leave the investigation; the last
            # caller to leave stops it and its LLM / Data Storage requests.
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _analyze(
        self,
        incident: Incident,
        force: bool,
        on_event: Callable[[r.AnalysisEvent], None] | None = None,
    ) -> tuple[analysis_pb2.AnalysisResult, list[service_pb2.AnalyzeIncidentStreamResponse]]:
        """The result of this incident (joined, kept from an earlier call, or investigated),
        and the events to replay when `on_event` did not see them as they happened."""

        async def investigate(sink: EventSink) -> Finished:
            events: list[r.AnalysisEvent] = []

            async def record(event: r.AnalysisEvent) -> None:
                events.append(event)
                await sink(event)

            result = await self._engine.investigate(incident, on_event=record)
            # The result holds the same tool calls and attempts as the events:
            # each is converted once, while both are alive (ids stay unique).
            converted: dict[int, Message] = {}
            frames = [_event_to_proto(e, converted) for e in events]
            payload = _pack(
                service_pb2.AnalyzeIncidentStreamResponse(
                    result=converters.result_to_proto(result, converted)
                ),
                frames,
            )
            return Finished(payload, worth_keeping(result))

        outcome = await self._idempotency.run(
            incident.remediation_id,
            # Computed when first needed (see IdempotencyCoordinator.run).
            functools.partial(incident_fingerprint, incident),
            investigate,
            force=force,
            on_event=on_event,
        )
        # Every caller decodes its own copy; the events only when it replays them.
        replay_needed = not outcome.live and on_event is not None
        last, replay = _unpack(outcome.payload, with_events=replay_needed)
        result = last.result
        result.completed_at.FromNanoseconds(int(outcome.completed_at * 1e9))
        if outcome.reused is not None:
            result.reused = True
            _REUSED[outcome.reused].inc()
        return result, replay

    async def ValidateWorkflowParameters(
        self,
        request: validation_pb2.ValidateWorkflowParametersRequest,
        context: grpc.aio.ServicerContext,
    ) -> validation_pb2.ValidateWorkflowParametersResponse:
        parameters = converters.struct_to_dict(request.parameters)
        with caller_budget(context):
            schema, outcome = await validate_workflow_parameters(
                self._catalog, request.workflow_id, parameters
            )
        _RPC_VALIDATIONS[outcome.valid].inc()
        return converters.validation_response(schema, outcome, request.parameters)


def _event_to_proto(
    event: r.AnalysisEvent, converted: dict[int, Message] | None = None
) -> service_pb2.AnalyzeIncidentStreamResponse:
    """The event as a stream message; tool-call records and validation attempts
    are entered into `converted` (by `id()`) for `result_to_proto` to reuse."""
    if isinstance(event, r.LlmTurn):
        return service_pb2.AnalyzeIncidentStreamResponse(llm_turn=converters.turn_to_proto(event))
    if isinstance(event, r.ToolCallRecord):
        call = converters.tool_call_to_proto(event)
        if converted is not None:
            converted[id(event)] = call
        return service_pb2.AnalyzeIncidentStreamResponse(tool_call=call)
    if isinstance(event, r.ValidationAttempt):
        attempt = converters.attempt_to_proto(event)
        if converted is not None:
            converted[id(event)] = attempt
        return service_pb2.AnalyzeIncidentStreamResponse(validation_attempt=attempt)
    if isinstance(event, r.AnalysisResult):
        return service_pb2.AnalyzeIncidentStreamResponse(result=converters.result_to_proto(event))
    raise TypeError(f"unexpected event {type(event).__name__}")


def _pack(
    result: service_pb2.AnalyzeIncidentStreamResponse,
    events: list[service_pb2.AnalyzeIncidentStreamResponse],
) -> bytes:
    """The result, then the events, as length-prefixed messages (the protobuf
    convention for a sequence), compressed.

    The result comes first so that a caller that replays nothing decodes only
    it. A result is kept for `HAPI_RESULT_TTL_SECONDS`, a thousand of them
    after an alert storm: tool results are JSON text, which zlib's fastest
    level shrinks to about a third for tens of microseconds.
    """
    out = io.BytesIO()
    proto.serialize_length_prefixed(result, out)
    for event in events:
        proto.serialize_length_prefixed(event, out)
    return zlib.compress(out.getvalue(), 1)


def _unpack(
    payload: bytes, *, with_events: bool
) -> tuple[
    service_pb2.AnalyzeIncidentStreamResponse, list[service_pb2.AnalyzeIncidentStreamResponse]
]:
    """The result of a `_pack`ed payload and, when asked, its events in order."""
    data = zlib.decompress(payload)
    stream = io.BytesIO(data)
    message = service_pb2.AnalyzeIncidentStreamResponse
    result = proto.parse_length_prefixed(message, stream)
    events = []
    while with_events and stream.tell() < len(data):
        events.append(proto.parse_length_prefixed(message, stream))
    return result, events


__all__ = ["IncidentAnalysisServicer"]
