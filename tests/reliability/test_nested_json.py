"""Deeply nested JSON from outside, through the real server: never INTERNAL.

About 6 KB nesting 3,000 levels, from each party that sends JSON: the model
(its HTTP body, a tool call's arguments, a parameter object sent as text), an
MCP tool server's `format: regex` argument check and its tool's result text
(SDK-written server), and a
Data Storage answer. What the model wrote comes back to it as repair feedback;
what a dependency sent ends the way that dependency failing does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiohttp import web

from hapi.v1 import analysis_pb2, tools_pb2
from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.domain.bounded_json import MAX_DEPTH
from tests.datastorage.conftest import FakeDataStorage, search_payload
from tests.e2e.test_analyze_e2e import OOM_ID, analyze, answer, search, stack
from tests.fakes.mcp_servers import stdio_config
from tests.fakes.scripted_llm import Step
from tests.toolsets.conftest import final_answer, request, serving, write_mcp_config

R = analysis_pb2.HumanReviewReason
INVALID = tools_pb2.TOOL_CALL_STATUS_INVALID_ARGUMENTS
DEEP_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000
DEEP_LIST = "[" * 3000 + "]" * 3000
VALIDATE = "validate_workflow_parameters"


def _deeper_than_bound(feedback: str) -> bool:
    return f"nested deeper than {MAX_DEPTH} levels" in feedback


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("search_workflow_catalog", DEEP_OBJECT),
        ("search_workflow_catalog", '{"query": "OOMKilled", "filters": ' + DEEP_OBJECT + "}"),
        (VALIDATE, json.dumps({"workflow_id": OOM_ID})[:-1] + ', "parameters": ' + DEEP_LIST + "}"),
        (VALIDATE, json.dumps({"workflow_id": OOM_ID, "parameters": DEEP_OBJECT})),
    ],
    ids=["arguments", "a-filter", "parameters", "parameters-as-text"],
)
async def test_deep_tool_call_arguments_come_back_to_the_model_as_repair(
    name: str, arguments: str
) -> None:
    script = [Step.tool_calls([(name, arguments)]), answer(workflow_id=None)]
    async with stack(script) as (srv, llm_server, _):
        result = await analyze(srv)
        feedback = [
            m["content"] for m in llm_server.requests[1].json["messages"] if m["role"] == "tool"
        ]
    (call,) = result.tool_calls
    assert call.status == INVALID
    assert _deeper_than_bound(feedback[0])


async def test_a_deep_model_reply_body_is_a_model_failure_not_internal() -> None:
    body = {"choices": [{"message": {"role": "assistant", "content": "x"}}], "x": 0}
    raw = json.dumps(body)[:-2] + DEEP_LIST + "}"  # the body as sent, byte for byte
    async with stack([Step.invalid_json(raw)]) as (srv, _, _catalog):
        result = await analyze(srv)
    assert result.needs_human_review
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_LLM_UNAVAILABLE


async def test_a_regex_argument_nested_past_the_bound_is_refused_before_the_call(
    tmp_path: Path,
) -> None:
    config = write_mcp_config(
        tmp_path / "mcp.json",
        {"ops": stdio_config(allowedTools=["grep_logs"], timeoutSeconds=5)},
    )
    pattern = "(" * 3000 + "a" + ")" * 3000
    script = [
        Step.tool_calls([("ops__grep_logs", {"pattern": pattern})]),
        Step.tool_calls([("ops__grep_logs", {"pattern": "(oom|killed)"})]),
        final_answer(),
    ]
    async with serving(script, mcp_config=config) as served:
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
    refused, called = result.tool_calls
    assert refused.status == INVALID
    assert f"is not a valid regex (groups nested deeper than {MAX_DEPTH} levels)" in refused.result
    assert called.status == tools_pb2.TOOL_CALL_STATUS_SUCCESS


async def test_a_deep_mcp_tool_result_is_read_as_text_not_internal(tmp_path: Path) -> None:
    config = write_mcp_config(
        tmp_path / "mcp.json",
        {"ops": stdio_config(allowedTools=["nested"], timeoutSeconds=5)},
    )
    script = [Step.tool_calls([("ops__nested", {"levels": 3000})]), final_answer()]
    async with serving(script, mcp_config=config) as served:
        result = (await served.stub.AnalyzeIncident(request(), timeout=60)).result
    (called,) = result.tool_calls
    assert called.status == tools_pb2.TOOL_CALL_STATUS_SUCCESS
    assert '"content":"{\\"a\\":{\\"a\\":' in called.result  # data, as text


class DeepDataStorage(FakeDataStorage):
    async def _default(self, request: web.Request) -> web.StreamResponse:
        payload: dict[str, Any] = search_payload()
        text = json.dumps(payload)
        text = text.replace('"confidence"', '"detected_labels": ' + DEEP_OBJECT + ', "confidence"')
        return web.Response(text=text, content_type="application/json")


async def test_a_deep_data_storage_answer_is_a_contract_failure_not_internal() -> None:
    ds = DeepDataStorage()
    await ds.start()
    catalog = DataStorageCatalog(DataStorageClient(ds.url))
    try:
        async with stack([search(), answer(workflow_id=None)], catalog=catalog) as (srv, llm, _):
            try:
                result = await analyze(srv)
            except grpc.aio.AioRpcError as err:  # pragma: no cover - the failure shown
                pytest.fail(f"the call ended {err.code().name}: {err.details()}")
            feedback = [
                m["content"] for m in llm.requests[1].json["messages"] if m["role"] == "tool"
            ]
    finally:
        await catalog.close()
        await ds.stop()
    (call,) = result.tool_calls
    assert call.status != tools_pb2.TOOL_CALL_STATUS_SUCCESS
    assert "the workflow catalog is unavailable" in feedback[0]  # degraded, as designed
