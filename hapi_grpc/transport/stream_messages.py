"""An analysis's events and result as `AnalyzeIncidentStreamResponse` messages.

The `MessageCodec` the application layer keeps and streams results with.
"""

from __future__ import annotations

from google.protobuf.message import Message

from hapi.v1.service_pb2 import AnalyzeIncidentStreamResponse as StreamResponse
from hapi_grpc.domain import result as r
from hapi_grpc.transport import converters

__all__ = ["StreamMessages", "event_to_proto"]


def event_to_proto(
    event: r.AnalysisEvent, converted: dict[int, Message] | None = None
) -> StreamResponse:
    """The event as a stream message; tool-call records and validation attempts
    are entered into `converted` (by `id()`) for `result_to_proto` to reuse."""
    if isinstance(event, r.LlmTurn):
        return StreamResponse(llm_turn=converters.turn_to_proto(event))
    if isinstance(event, r.ToolCallRecord):
        call = converters.tool_call_to_proto(event)
        if converted is not None:
            converted[id(event)] = call
        return StreamResponse(tool_call=call)
    if isinstance(event, r.ValidationAttempt):
        attempt = converters.attempt_to_proto(event)
        if converted is not None:
            converted[id(event)] = attempt
        return StreamResponse(validation_attempt=attempt)
    if isinstance(event, r.AnalysisResult):
        return StreamResponse(result=converters.result_to_proto(event))
    raise TypeError(f"unexpected event {type(event).__name__}")


class StreamMessages:
    """`MessageCodec[AnalyzeIncidentStreamResponse]`: a stream's messages, the result last."""

    message_type = StreamResponse
    event = staticmethod(event_to_proto)

    def result(self, result: r.AnalysisResult, converted: dict[int, Message]) -> StreamResponse:
        return StreamResponse(result=converters.result_to_proto(result, converted))

    def stamp(self, message: StreamResponse, completed_at: float, reused: bool) -> None:
        message.result.completed_at.FromNanoseconds(int(completed_at * 1e9))
        if reused:
            message.result.reused = True
