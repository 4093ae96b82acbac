"""How much of what the tools read goes back to callers (HAPI_TOOL_OUTPUT_EXPOSURE).

- `full`: everything, as the tools returned it (after redaction).
- `summary`: tool-call records keep their name, arguments, status and
  duration; the raw output in `result` is replaced by a short JSON note with
  its size.
- `none`: no tool-call records at all (in the result or the stream) and no
  model text (which may quote what the tools read); the decision, its
  validation attempts and the names of the tools each turn asked for remain.

Applied to each response message just before it is sent, so it covers live
events, replays and results kept from earlier calls alike.
"""

from __future__ import annotations

import json
from typing import Literal

from hapi.v1 import analysis_pb2, service_pb2, tools_pb2

Exposure = Literal["full", "summary", "none"]
EXPOSURES: tuple[Exposure, ...] = ("full", "summary", "none")


def withheld_note(characters: int) -> str:
    """What `summary` puts in place of a tool's output."""
    return json.dumps(
        {"output_withheld": "HAPI_TOOL_OUTPUT_EXPOSURE=summary", "characters": characters},
        separators=(",", ":"),
    )


def _summarize(call: tools_pb2.ToolCallRecord) -> None:
    if call.result:
        call.result = withheld_note(len(call.result))


def limit_result(result: analysis_pb2.AnalysisResult, exposure: Exposure) -> None:
    """Strip `result` in place down to `exposure`."""
    if exposure == "none":
        del result.tool_calls[:]
    elif exposure == "summary":
        for call in result.tool_calls:
            _summarize(call)


def limit_frame(
    frame: service_pb2.AnalyzeIncidentStreamResponse, exposure: Exposure
) -> service_pb2.AnalyzeIncidentStreamResponse | None:
    """The stream message stripped down to `exposure`, or None when nothing of it may go."""
    kind = frame.WhichOneof("event")
    if kind == "result":
        limit_result(frame.result, exposure)
    elif kind == "tool_call":
        if exposure == "none":
            return None
        if exposure == "summary":
            _summarize(frame.tool_call)
    elif kind == "llm_turn" and exposure == "none":
        frame.llm_turn.content = ""
    return frame
