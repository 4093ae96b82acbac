"""AnthropicProvider against a scripted server speaking the Messages API."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback

import pytest
from prometheus_client import REGISTRY

from hapi_grpc.adapters.llm.anthropic import DEFAULT_MODEL, AnthropicProvider
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError, LLMResponseError, LLMUnavailableError
from hapi_grpc.domain.llm import ChatMessage, ToolCall, ToolDefinition
from tests.fakes.scripted_llm import ScriptedLLMServer, Step

KEY = "sk-test-SECRET-123"
MODEL = "claude-test"

SEARCH_TOOL = ToolDefinition(
    name="search_workflow_catalog",
    description="Search the remediation workflow catalog.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)
VALIDATE_TOOL = ToolDefinition(
    name="validate_workflow_parameters",
    description="Validate parameters against a workflow schema.",
    parameters={"type": "object", "properties": {"workflow_id": {"type": "string"}}},
)


def conversation(first: str = "Investigate OOMKilled in payments") -> list[ChatMessage]:
    return [ChatMessage("system", "You are an SRE."), ChatMessage("user", first)]


def provider(server: ScriptedLLMServer, **kwargs: object) -> AnthropicProvider:
    options: dict[str, object] = {"backoff_base": 0.01, "request_timeout": 5.0}
    options.update(kwargs)
    return AnthropicProvider(server.base_url, MODEL, KEY, **options)  # type: ignore[arg-type]


def requests_total(status: str) -> float:
    value = REGISTRY.get_sample_value(
        "hapi_llm_requests_total", {"provider": "anthropic", "model": MODEL, "status": status}
    )
    return value or 0.0


def tokens_total(kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "hapi_llm_tokens_total", {"provider": "anthropic", "model": MODEL, "kind": kind}
    )
    return value or 0.0


# --- request shape ---------------------------------------------------------------


async def test_request_on_the_wire_hoists_system_and_merges_tool_results() -> None:
    messages = [
        *conversation(),
        ChatMessage(
            "assistant",
            "Let me look.",
            tool_calls=(
                ToolCall("toolu_1", "search_workflow_catalog", '{"query": "OOMKilled"}'),
                ToolCall("toolu_2", "validate_workflow_parameters", '{"workflow_id": "oom-v1"}'),
            ),
        ),
        ChatMessage("tool", "3 workflows", tool_call_id="toolu_1"),
        ChatMessage("tool", "valid", tool_call_id="toolu_2"),
        ChatMessage("system", "Answer in JSON."),
        ChatMessage("user", "Now decide."),
    ]
    async with ScriptedLLMServer("anthropic", [Step.text("done")]) as server:
        llm = provider(server)
        try:
            await llm.complete(messages, [SEARCH_TOOL, VALIDATE_TOOL])
        finally:
            await llm.close()

    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in request.headers
    body = request.json
    assert body["model"] == MODEL
    assert body["max_tokens"] == 2048
    assert body["temperature"] == 0.0
    assert body["system"] == "You are an SRE.\n\nAnswer in JSON."
    assert body["tools"] == [
        {
            "name": "search_workflow_catalog",
            "description": "Search the remediation workflow catalog.",
            "input_schema": SEARCH_TOOL.parameters,
        },
        {
            "name": "validate_workflow_parameters",
            "description": "Validate parameters against a workflow schema.",
            "input_schema": VALIDATE_TOOL.parameters,
        },
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Investigate OOMKilled in payments"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "search_workflow_catalog",
                    "input": {"query": "OOMKilled"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "validate_workflow_parameters",
                    "input": {"workflow_id": "oom-v1"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 workflows"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "valid"},
                {"type": "text", "text": "Now decide."},
            ],
        },
    ]


async def test_malformed_arguments_and_foreign_ids_keep_the_conversation_valid() -> None:
    # Arguments that are not a JSON object are sent as {}; ids the API would
    # refuse are mapped the same way on both sides. The strict fake server
    # rejects the request (400) if either pairing or input shape is wrong.
    messages = [
        *conversation(),
        ChatMessage(
            "assistant",
            "",
            tool_calls=(
                ToolCall("call 1/openai", "search_workflow_catalog", '{"query": "OOM'),
                ToolCall("call_2", "search_workflow_catalog", '["not", "an", "object"]'),
            ),
        ),
        ChatMessage("tool", "invalid JSON arguments", tool_call_id="call 1/openai"),
        ChatMessage("tool", "arguments must be an object", tool_call_id="call_2"),
    ]
    async with ScriptedLLMServer("anthropic", [Step.text("retrying")]) as server:
        llm = provider(server)
        try:
            result = await llm.complete(messages, [SEARCH_TOOL])
        finally:
            await llm.close()

    assert result.content == "retrying"
    assistant, results = server.requests[0].json["messages"][1:]
    first_use, second_use = assistant["content"]  # no empty text block
    assert first_use["input"] == {} and second_use["input"] == {}
    assert first_use["id"] != "call 1/openai"
    assert [b["tool_use_id"] for b in results["content"]] == [first_use["id"], "call_2"]


async def test_no_tools_no_system_and_no_key_leave_fields_out() -> None:
    async with ScriptedLLMServer("anthropic", [Step.text("ok")]) as server:
        llm = AnthropicProvider(server.base_url, MODEL, temperature=None, max_tokens=None)
        try:
            await llm.complete([ChatMessage("user", "hi")], [])
        finally:
            await llm.close()
    (request,) = server.requests
    assert "x-api-key" not in request.headers
    for absent in ("tools", "system", "temperature"):
        assert absent not in request.json
    assert request.json["max_tokens"] == 2048  # required by the API, so never left out


def test_defaults_follow_adr_038_and_bad_settings_fail_at_construction() -> None:
    assert AnthropicProvider().model == DEFAULT_MODEL == "claude-haiku-4-5"
    with pytest.raises(ValueError, match="temperature"):
        AnthropicProvider(temperature=1.5)
    with pytest.raises(ValueError, match="max_retries"):
        AnthropicProvider(max_retries=-1)


# --- response parsing -----------------------------------------------------------


async def test_text_tool_use_and_usage_are_parsed() -> None:
    prompt_before, completion_before = tokens_total("prompt"), tokens_total("completion")
    script = [
        Step.tool_calls(
            [("search_workflow_catalog", {"query": "OOMKilled critical", "top_k": 3})],
            text="I will search the catalog.",
        )
    ]
    async with ScriptedLLMServer("anthropic", script) as server:
        llm = provider(server)
        try:
            result = await llm.complete(conversation(), [SEARCH_TOOL])
        finally:
            await llm.close()

    assert result.content == "I will search the catalog."
    (call,) = result.tool_calls
    assert call.name == "search_workflow_catalog"
    assert call.id.startswith("toolu_")
    assert json.loads(call.arguments) == {"query": "OOMKilled critical", "top_k": 3}
    assert result.finish_reason == "tool_use"
    assert result.model == MODEL
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (100, 20)
    assert tokens_total("prompt") - prompt_before == 100
    assert tokens_total("completion") - completion_before == 20


async def test_cached_prompt_tokens_count_as_prompt_tokens() -> None:
    body = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 200,
            "cache_creation_input_tokens": 5,
            "output_tokens": 7,
        },
    }
    async with ScriptedLLMServer("anthropic", [Step.json(body)]) as server:
        llm = provider(server)
        try:
            result = await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert result.content == "a\nb"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (215, 7)
    assert result.model == MODEL  # the configured name when the body has none
    assert result.finish_reason == "end_turn"


@pytest.mark.parametrize(
    "body",
    [
        {"type": "message", "role": "assistant"},
        {"type": "message", "content": "plain text"},
        {"content": [{"type": "tool_use", "input": {}}]},
        [],
    ],
)
async def test_200_that_is_not_a_message_is_a_response_error(body: object) -> None:
    async with ScriptedLLMServer("anthropic", [Step.json(body), Step.text("never")]) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMResponseError, match="anthropic"):
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert len(server.requests) == 1


async def test_invalid_json_200_is_a_response_error() -> None:
    script = [Step.invalid_json('{"type": "message", "content": [')]
    async with ScriptedLLMServer("anthropic", script) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMResponseError, match="not JSON"):
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert len(server.requests) == 1


# --- retries and errors -------------------------------------------------------------


async def test_overloaded_529_and_500_are_retried() -> None:
    server_errors = requests_total("server_error")
    script = [Step.error(529, "Overloaded"), Step.error(500, "boom"), Step.text("ok")]
    async with ScriptedLLMServer("anthropic", script) as server:
        llm = provider(server)
        try:
            result = await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert result.content == "ok"
    assert len(server.requests) == 3
    assert requests_total("server_error") - server_errors == 2


async def test_overloaded_beyond_retries_names_provider_status_and_message() -> None:
    async with ScriptedLLMServer("anthropic", [Step.error(529, "Overloaded")] * 3) as server:
        llm = provider(server, max_retries=1)
        try:
            with pytest.raises(LLMUnavailableError) as caught:
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert "anthropic" in str(caught.value)
    assert "HTTP 529: overloaded_error: Overloaded" in str(caught.value)
    assert len(server.requests) == 2


async def test_429_retry_after_is_honoured() -> None:
    script = [
        Step.error(429, "rate limited", headers={"Retry-After": "0.3"}),
        Step.text("ok"),
    ]
    async with ScriptedLLMServer("anthropic", script) as server:
        llm = provider(server, backoff_base=0.001)
        try:
            assert (await llm.complete(conversation(), [])).content == "ok"
        finally:
            await llm.close()
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.3


async def test_429_retry_after_beyond_budget_fails_fast() -> None:
    script = [Step.error(429, "rate limited", headers={"Retry-After": "10"}), Step.text("no")]
    async with ScriptedLLMServer("anthropic", script) as server:
        llm = provider(server)
        started = time.monotonic()
        try:
            with budget_scope(Budget.from_timeout(1.0)):
                with pytest.raises(LLMUnavailableError, match="Retry-After 10s"):
                    await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert time.monotonic() - started < 0.8
    assert len(server.requests) == 1


async def test_401_is_not_retried_and_the_key_never_leaks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    script = [Step.error(401, f"invalid x-api-key {KEY}"), Step.text("never")]
    async with ScriptedLLMServer("anthropic", script) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMUnavailableError) as caught:
                await llm.complete(conversation(), [])
        finally:
            await llm.close()

    text = str(caught.value)
    assert "anthropic" in text and "HTTP 401" in text
    assert "authentication_error: invalid x-api-key" in text
    assert KEY not in text and "SECRET" not in text
    assert KEY not in "".join(traceback.format_exception(caught.value))
    assert KEY not in caplog.text and "SECRET" not in caplog.text
    assert len(server.requests) == 1


async def test_timeouts_are_retried_then_unavailable() -> None:
    timeouts = requests_total("timeout")
    async with ScriptedLLMServer("anthropic", [Step.text("late", delay=3.0)] * 3) as server:
        llm = provider(server, request_timeout=0.15, max_retries=2)
        try:
            with pytest.raises(LLMUnavailableError, match=r"3 attempt\(s\): timed out"):
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
        assert await server.wait_aborted(3, within=2.0)
    assert len(server.requests) == 3
    assert requests_total("timeout") - timeouts == 3


# --- deadlines and cancellation ---------------------------------------------------------


async def test_cancellation_aborts_the_http_request() -> None:
    async with ScriptedLLMServer("anthropic", [Step.text("late", delay=5.0)]) as server:
        llm = provider(server)
        try:
            task = asyncio.create_task(llm.complete(conversation(), []))
            assert await server.wait_requests(1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await server.wait_aborted(1, within=0.5)
        finally:
            await llm.close()


async def test_budget_bounds_a_slow_reply() -> None:
    async with ScriptedLLMServer("anthropic", [Step.text("late", delay=5.0)]) as server:
        llm = provider(server, request_timeout=120.0)
        started = time.monotonic()
        try:
            with budget_scope(Budget.from_timeout(0.3)):
                with pytest.raises(BudgetExhaustedError):
                    await llm.complete(conversation(), [])
        finally:
            await llm.close()
        elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 0.8
    assert len(server.requests) == 1
