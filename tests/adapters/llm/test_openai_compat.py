"""OpenAICompatibleProvider against a scripted server speaking Chat Completions."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback

import aiohttp
import pytest
from prometheus_client import REGISTRY

from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider, parse_openai_response
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError, LLMResponseError, LLMUnavailableError
from hapi_grpc.domain.llm import ChatMessage, ToolCall, ToolDefinition
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, last_tool_result

KEY = "sk-test-SECRET-123"
MODEL = "gpt-test"

SEARCH_TOOL = ToolDefinition(
    name="search_workflow_catalog",
    description="Search the remediation workflow catalog.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)


def conversation(first: str = "Investigate OOMKilled in payments") -> list[ChatMessage]:
    return [ChatMessage("system", "You are an SRE."), ChatMessage("user", first)]


def provider(server: ScriptedLLMServer, **kwargs: object) -> OpenAICompatibleProvider:
    options: dict[str, object] = {"backoff_base": 0.01, "request_timeout": 5.0}
    options.update(kwargs)
    return OpenAICompatibleProvider(server.base_url, MODEL, KEY, **options)  # type: ignore[arg-type]


def requests_total(status: str) -> float:
    value = REGISTRY.get_sample_value(
        "hapi_llm_requests_total", {"provider": "openai", "model": MODEL, "status": status}
    )
    return value or 0.0


def tokens_total(kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "hapi_llm_tokens_total", {"provider": "openai", "model": MODEL, "kind": kind}
    )
    return value or 0.0


# --- request shape ---------------------------------------------------------------


async def test_request_on_the_wire_maps_messages_tools_and_bearer_auth() -> None:
    messages = [
        *conversation(),
        ChatMessage(
            "assistant",
            "",
            tool_calls=(ToolCall("call_1", "search_workflow_catalog", '{"query": "OOMKilled"}'),),
        ),
        ChatMessage(
            "tool", '{"workflows": []}', tool_call_id="call_1", name="search_workflow_catalog"
        ),
        ChatMessage("assistant", "Nothing found."),
        ChatMessage("user", "Try again."),
    ]
    async with ScriptedLLMServer("openai", [Step.text("done")]) as server:
        llm = provider(server)
        try:
            await llm.complete(messages, [SEARCH_TOOL])
        finally:
            await llm.close()

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert "api-key" not in request.headers
    body = request.json
    assert body["model"] == MODEL
    assert body["tool_choice"] == "auto"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 2048
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search_workflow_catalog",
                "description": "Search the remediation workflow catalog.",
                "parameters": SEARCH_TOOL.parameters,
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are an SRE."},
        {"role": "user", "content": "Investigate OOMKilled in payments"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "search_workflow_catalog",
                        "arguments": '{"query": "OOMKilled"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"workflows": []}'},
        {"role": "assistant", "content": "Nothing found."},
        {"role": "user", "content": "Try again."},
    ]


async def test_azure_style_uses_api_key_header_and_api_version_query() -> None:
    async with ScriptedLLMServer("openai", [Step.text("ok")]) as server:
        llm = OpenAICompatibleProvider(
            f"http://127.0.0.1:{server.port}/openai/deployments/gpt4o",
            "gpt4o",
            KEY,
            auth_style="api-key",
            extra_query={"api-version": "2024-10-21"},
        )
        try:
            await llm.complete(conversation(), [SEARCH_TOOL])
        finally:
            await llm.close()

    (request,) = server.requests
    assert request.path == "/openai/deployments/gpt4o/chat/completions"
    assert request.query == {"api-version": "2024-10-21"}
    assert request.headers["api-key"] == KEY
    assert "Authorization" not in request.headers


async def test_optional_fields_are_left_out() -> None:
    async with ScriptedLLMServer("openai", [Step.text("ok")]) as server:
        llm = OpenAICompatibleProvider(
            server.base_url, MODEL, "", temperature=None, max_tokens=None
        )
        try:
            await llm.complete(conversation(), [])
        finally:
            await llm.close()

    (request,) = server.requests
    assert "Authorization" not in request.headers  # local servers run without a key
    for absent in ("tools", "tool_choice", "temperature", "max_tokens"):
        assert absent not in request.json


# --- response parsing -----------------------------------------------------------


async def test_text_answer_and_usage_are_parsed_and_counted() -> None:
    prompt_before, completion_before = tokens_total("prompt"), tokens_total("completion")
    ok_before = requests_total("ok")
    async with ScriptedLLMServer("openai", [Step.text("Root cause: memory limit.")]) as server:
        llm = provider(server)
        try:
            result = await llm.complete(conversation(), [SEARCH_TOOL])
        finally:
            await llm.close()

    assert result.content == "Root cause: memory limit."
    assert result.tool_calls == ()
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (100, 20)
    assert result.model == MODEL
    assert result.finish_reason == "stop"
    assert tokens_total("prompt") - prompt_before == 100
    assert tokens_total("completion") - completion_before == 20
    assert requests_total("ok") - ok_before == 1


async def test_tool_calls_keep_raw_argument_text_even_when_malformed() -> None:
    script = [
        Step.tool_calls(
            [
                ("search_workflow_catalog", {"query": "OOMKilled critical"}),
                ("validate_workflow_parameters", '{"workflow_id": "oom-v1", '),
            ],
            text="Searching.",
        )
    ]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server)
        try:
            result = await llm.complete(conversation(), [SEARCH_TOOL])
        finally:
            await llm.close()

    assert result.content == "Searching."
    assert result.finish_reason == "tool_calls"
    first, second = result.tool_calls
    assert first.name == "search_workflow_catalog"
    assert json.loads(first.arguments) == {"query": "OOMKilled critical"}
    assert second.arguments == '{"workflow_id": "oom-v1", '
    assert first.id and second.id and first.id != second.id


async def test_object_arguments_and_missing_ids_from_local_servers() -> None:
    script = [
        Step.tool_calls(
            [("search_workflow_catalog", {"query": "a"}), ("search_workflow_catalog", "{}")],
            arguments_as_object=True,
            omit_ids=True,
        )
    ]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server)
        try:
            result = await llm.complete(conversation(), [SEARCH_TOOL])
        finally:
            await llm.close()

    a, b = result.tool_calls
    assert isinstance(a.arguments, str) and json.loads(a.arguments) == {"query": "a"}
    assert json.loads(b.arguments) == {}
    assert a.id.startswith("call_") and b.id.startswith("call_") and a.id != b.id


def test_synthesized_ids_are_stable_for_the_same_response() -> None:
    body = {
        "id": "chatcmpl-9",
        "choices": [
            {
                "message": {"tool_calls": [{"function": {"name": "t", "arguments": {"x": 1}}}]},
                "finish_reason": "tool_calls",
            }
        ],
    }
    first = parse_openai_response(body, MODEL).tool_calls[0].id
    assert first == parse_openai_response(body, MODEL).tool_calls[0].id
    other = {**body, "id": "chatcmpl-10"}
    assert parse_openai_response(other, MODEL).tool_calls[0].id != first


@pytest.mark.parametrize(
    "body",
    [
        {"object": "chat.completion", "choices": []},
        {"choices": [{"finish_reason": "stop"}]},
        ["not", "an", "object"],
        {"choices": [{"message": {"content": 42}}]},
        {"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]},
    ],
)
async def test_200_that_is_not_a_completion_is_a_response_error(body: object) -> None:
    async with ScriptedLLMServer("openai", [Step.json(body), Step.text("never")]) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMResponseError, match="openai"):
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert len(server.requests) == 1  # not retried


async def test_invalid_json_200_is_a_response_error_and_not_retried() -> None:
    async with ScriptedLLMServer("openai", [Step.invalid_json(), Step.text("never")]) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMResponseError, match="not JSON"):
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert len(server.requests) == 1


# --- retries and errors -------------------------------------------------------------


async def test_server_error_is_retried_then_succeeds() -> None:
    server_errors = requests_total("server_error")
    script = [Step.error(500, "internal error"), Step.drop(), Step.text("recovered")]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server)
        try:
            result = await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert result.content == "recovered"
    assert len(server.requests) == 3
    assert requests_total("server_error") - server_errors == 1
    # Each attempt sends the whole body again (it is not kept between them),
    # with its length: never chunked, which some model servers refuse.
    first = server.requests[0]
    for sent in server.requests:
        assert sent.json == first.json
        assert sent.headers["Content-Length"] == first.headers["Content-Length"]
        assert "Transfer-Encoding" not in sent.headers
    body_bytes = json.dumps(first.json, ensure_ascii=False).encode()  # as the adapter encodes
    assert int(first.headers["Content-Length"]) == len(body_bytes)


async def test_retries_stop_after_max_retries() -> None:
    script = [Step.error(503, "busy")] * 5
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server, max_retries=2)
        try:
            with pytest.raises(LLMUnavailableError, match=r"3 attempt\(s\): HTTP 503: .*busy"):
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert len(server.requests) == 3


async def test_429_retry_after_is_honoured() -> None:
    rate_limited = requests_total("rate_limited")
    script = [Step.error(429, "slow down", headers={"Retry-After": "0.3"}), Step.text("ok")]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server, backoff_base=0.001)
        try:
            result = await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert result.content == "ok"
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.3
    assert requests_total("rate_limited") - rate_limited == 1


async def test_429_retry_after_beyond_budget_fails_fast_as_unavailable() -> None:
    # Chosen behaviour: LLMUnavailableError (the provider is what failed), at once.
    script = [Step.error(429, "quota", headers={"Retry-After": "30"}), Step.text("never")]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server)
        started = time.monotonic()
        try:
            with budget_scope(Budget.from_timeout(2.0)):
                with pytest.raises(LLMUnavailableError, match=r"HTTP 429.*Retry-After 30"):
                    await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert time.monotonic() - started < 1.0
    assert len(server.requests) == 1


async def test_401_is_not_retried_and_names_the_provider_message() -> None:
    message = "Incorrect API key provided. You can find your API key in your account."
    async with ScriptedLLMServer("openai", [Step.error(401, message), Step.text("no")]) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMUnavailableError) as caught:
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    text = str(caught.value)
    assert "openai" in text and "HTTP 401" in text
    assert "Incorrect API key provided" in text
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("script", "budget"),
    [
        pytest.param([Step.error(401, f"Incorrect API key provided: {KEY}")], None, id="401"),
        pytest.param([Step.error(500, f"upstream said Bearer {KEY}")] * 3, None, id="500-retried"),
        pytest.param(
            [Step.error(429, f"quota of {KEY}", headers={"Retry-After": "9"})], 1.0, id="429"
        ),
    ],
)
async def test_the_key_never_leaks_into_errors_tracebacks_or_logs(
    script: list[Step], budget: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMUnavailableError) as caught:
                if budget is None:
                    await llm.complete(conversation(), [])
                else:
                    with budget_scope(Budget.from_timeout(budget)):
                        await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert server.requests[0].headers["Authorization"] == f"Bearer {KEY}"  # it was sent
    rendered = "".join(traceback.format_exception(caught.value))
    for text in (str(caught.value), repr(caught.value), rendered, caplog.text):
        assert KEY not in text and "SECRET" not in text
    assert "[REDACTED]" in str(caught.value)


async def test_long_provider_messages_are_truncated() -> None:
    async with ScriptedLLMServer("openai", [Step.error(400, "x" * 5000)]) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMUnavailableError) as caught:
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert len(str(caught.value)) < 500


async def test_secret_extra_headers_are_redacted_too() -> None:
    proxy_token = "litellm-proxy-token-42"
    async with ScriptedLLMServer("openai", [Step.error(403, f"bad {proxy_token}")]) as server:
        llm = provider(server, extra_headers={"X-Proxy-Token": proxy_token})
        try:
            with pytest.raises(LLMUnavailableError) as caught:
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert server.requests[0].headers["X-Proxy-Token"] == proxy_token
    assert proxy_token not in str(caught.value)


async def test_strict_server_rejection_is_a_client_error_without_retry() -> None:
    broken = [*conversation(), ChatMessage("tool", "orphan", tool_call_id="call_x")]
    client_errors = requests_total("client_error")
    async with ScriptedLLMServer("openai", [Step.text("never")]) as server:
        llm = provider(server)
        try:
            with pytest.raises(LLMUnavailableError, match=r"HTTP 400.*role 'tool'"):
                await llm.complete(broken, [])
        finally:
            await llm.close()
    assert len(server.requests) == 1
    assert requests_total("client_error") - client_errors == 1


async def test_timeouts_are_retried_then_unavailable() -> None:
    timeouts = requests_total("timeout")
    script = [Step.text("late", delay=3.0)] * 2
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server, request_timeout=0.2, max_retries=1)
        started = time.monotonic()
        try:
            with pytest.raises(LLMUnavailableError, match=r"2 attempt\(s\): timed out"):
                await llm.complete(conversation(), [])
        finally:
            await llm.close()
        elapsed = time.monotonic() - started
        assert await server.wait_aborted(2, within=2.0)
    assert elapsed < 1.5
    assert len(server.requests) == 2
    assert requests_total("timeout") - timeouts == 2


async def test_connection_refused_is_unavailable() -> None:
    async with ScriptedLLMServer("openai") as server:
        url = server.base_url
    llm = OpenAICompatibleProvider(url, MODEL, KEY, max_retries=1, backoff_base=0.01)
    try:
        with pytest.raises(LLMUnavailableError, match="connection error"):
            await llm.complete(conversation(), [])
    finally:
        await llm.close()


# --- deadlines and cancellation ---------------------------------------------------------


async def test_cancellation_aborts_the_http_request() -> None:
    cancelled = requests_total("cancelled")
    async with ScriptedLLMServer("openai", [Step.text("late", delay=5.0)]) as server:
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
    assert requests_total("cancelled") - cancelled == 1


async def test_budget_bounds_a_slow_reply() -> None:
    async with ScriptedLLMServer("openai", [Step.text("late", delay=5.0)]) as server:
        llm = provider(server, request_timeout=120.0)
        started = time.monotonic()
        try:
            with budget_scope(Budget.from_timeout(0.3)):
                with pytest.raises(BudgetExhaustedError):
                    await llm.complete(conversation(), [])
        finally:
            await llm.close()
        elapsed = time.monotonic() - started
        assert await server.wait_aborted(1, within=1.0)
    assert 0.25 <= elapsed < 0.8
    assert len(server.requests) == 1


async def test_spent_budget_sends_nothing() -> None:
    async with ScriptedLLMServer("openai", [Step.text("never")]) as server:
        llm = provider(server)
        try:
            with budget_scope(Budget.from_timeout(0.0)):
                with pytest.raises(BudgetExhaustedError):
                    await llm.complete(conversation(), [])
        finally:
            await llm.close()
    assert server.requests == []


# --- sessions -----------------------------------------------------------------------


async def test_shared_session_is_used_and_left_open() -> None:
    async with ScriptedLLMServer("openai", [Step.text("a")]) as server:
        async with aiohttp.ClientSession() as session:
            llm = provider(server, session=session)
            await llm.complete(conversation(), [])
            await llm.close()
            assert not session.closed


async def test_close_releases_the_owned_session_and_a_later_call_reopens_one() -> None:
    async with ScriptedLLMServer("openai", [Step.text("a"), Step.text("b")]) as server:
        llm = provider(server)
        assert (await llm.complete(conversation(), [])).content == "a"
        await llm.close()
        assert (await llm.complete(conversation(), [])).content == "b"
        await llm.close()


# --- the scripted server itself ---------------------------------------------------------


async def test_concurrent_conversations_each_play_the_whole_script() -> None:
    script = [Step.text("first", delay=0.1), Step.text("second")]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server)
        try:
            results = await asyncio.gather(
                llm.complete(conversation("incident A"), []),
                llm.complete(conversation("incident B"), []),
            )
            follow_up = await llm.complete(conversation("incident A"), [])
        finally:
            await llm.close()
    assert [r.content for r in results] == ["first", "first"]
    assert follow_up.content == "second"
    assert server.conversation_count == 2


async def test_callable_steps_react_to_tool_results_and_exhaustion_is_reported() -> None:
    script = [
        Step.tool_calls([("search_workflow_catalog", {"query": "oom"})]),
        lambda request: Step.text(f"saw {last_tool_result(request)}"),
    ]
    async with ScriptedLLMServer("openai", script) as server:
        llm = provider(server, max_retries=0)
        try:
            messages = conversation()
            first = await llm.complete(messages, [SEARCH_TOOL])
            (call,) = first.tool_calls
            messages += [
                ChatMessage("assistant", first.content, tool_calls=first.tool_calls),
                ChatMessage("tool", "3 workflows", tool_call_id=call.id),
            ]
            second = await llm.complete(messages, [SEARCH_TOOL])
            with pytest.raises(LLMUnavailableError, match="script exhausted"):
                await llm.complete(messages, [SEARCH_TOOL])
        finally:
            await llm.close()
    assert second.content == "saw 3 workflows"
