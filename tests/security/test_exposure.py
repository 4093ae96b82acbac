"""HAPI_TOOL_OUTPUT_EXPOSURE through the real server: how much of what the
tools read goes back to callers, in the result and in the stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hapi.v1 import service_pb2
from hapi_grpc.client import load_analyze_request
from tests.fakes.first_hit_model import FirstHitModel
from tests.fakes.investigation import wire_catalog
from tests.helpers.grpc_server import running_server

ROOT = Path(__file__).resolve().parents[2]


def _requests(
    remediation_id: str,
) -> tuple[service_pb2.AnalyzeIncidentRequest, service_pb2.AnalyzeIncidentStreamRequest]:
    unary = load_analyze_request(str(ROOT / "examples" / "oomkilled.json"))
    unary.incident.remediation_id = remediation_id
    stream = service_pb2.AnalyzeIncidentStreamRequest(incident=unary.incident)
    return unary, stream


async def _both(
    exposure: str | None, remediation_id: str
) -> tuple[service_pb2.AnalyzeIncidentResponse, list[service_pb2.AnalyzeIncidentStreamResponse]]:
    settings = {} if exposure is None else {"tool_output_exposure": exposure}
    unary, stream = _requests(remediation_id)
    # How much of what was read goes back: the wire, not the premises, is under test.
    async with running_server(catalog=wire_catalog(), llm=FirstHitModel(), **settings) as srv:
        response = await srv.stub.AnalyzeIncident(unary, timeout=30)
        # A second caller of the same incident gets the kept result and the
        # replayed events: limited just the same.
        frames = [f async for f in srv.stub.AnalyzeIncidentStream(stream, timeout=30)]
    return response, frames


def _kinds(frames: list[service_pb2.AnalyzeIncidentStreamResponse]) -> list[str]:
    return [str(f.WhichOneof("event")) for f in frames]


async def test_full_is_the_default_and_returns_what_the_tools_read() -> None:
    response, frames = await _both(None, "rr-exposure-full")
    calls = response.result.tool_calls
    assert [c.name for c in calls] == ["search_workflow_catalog", "validate_workflow_parameters"]
    found = json.loads(calls[0].result)
    assert "oomkill-increase-memory-v1" in json.dumps(found)
    streamed = [f.tool_call for f in frames if f.HasField("tool_call")]
    assert [c.result for c in streamed] == [c.result for c in calls]
    assert any(f.llm_turn.content for f in frames if f.HasField("llm_turn"))


async def test_summary_withholds_raw_tool_output() -> None:
    full, _ = await _both("full", "rr-exposure-summary-ref")
    response, frames = await _both("summary", "rr-exposure-summary")
    calls = response.result.tool_calls
    assert [c.name for c in calls] == [c.name for c in full.result.tool_calls]
    for call, reference in zip(calls, full.result.tool_calls, strict=True):
        assert json.loads(call.result) == {
            "output_withheld": "HAPI_TOOL_OUTPUT_EXPOSURE=summary",
            "characters": len(reference.result),
        }
        assert call.status == reference.status
        assert call.WhichOneof("arguments") == reference.WhichOneof("arguments")
    assert "oomkill-increase-memory-v1" not in "".join(c.result for c in calls)
    streamed = [f.tool_call for f in frames if f.HasField("tool_call")]
    assert len(streamed) == len(calls)
    assert all(json.loads(c.result)["output_withheld"] for c in streamed)
    (last,) = [f.result for f in frames if f.HasField("result")]
    assert [c.result for c in last.tool_calls] == [c.result for c in calls]
    # The decision itself is untouched.
    assert response.result.selected_workflow.workflow_id == "oomkill-scale-down-v1"


async def test_none_returns_no_tool_calls_and_no_model_text() -> None:
    response, frames = await _both("none", "rr-exposure-none")
    assert len(response.result.tool_calls) == 0
    assert "tool_call" not in _kinds(frames)
    turns = [f.llm_turn for f in frames if f.HasField("llm_turn")]
    assert turns and all(t.content == "" for t in turns)
    assert any(t.tool_calls for t in turns)  # which tools were asked for, without output
    (last,) = [f.result for f in frames if f.HasField("result")]
    assert len(last.tool_calls) == 0
    assert last.validation_attempts  # the parameter checks still show
    assert response.result.selected_workflow.workflow_id == "oomkill-scale-down-v1"


def test_unknown_exposure_is_a_configuration_error() -> None:
    from hapi_grpc.config import ConfigError, Settings

    with pytest.raises(ConfigError, match="HAPI_TOOL_OUTPUT_EXPOSURE"):
        Settings.from_env({"HAPI_TOOL_OUTPUT_EXPOSURE": "some"})
