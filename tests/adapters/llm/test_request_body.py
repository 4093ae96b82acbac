"""Request bodies of the HTTP model providers: tool lists encoded once, bodies built per attempt."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from hapi_grpc.adapters.llm.anthropic import to_anthropic_tools
from hapi_grpc.adapters.llm.http_provider import encode_body, tools_json
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider, to_openai_tools
from hapi_grpc.domain.llm import ChatMessage, ToolCall, ToolDefinition
from tests.fakes.scripted_llm import ScriptedLLMServer, Step

SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}


def tools(schema: dict[str, object] = SCHEMA, description: str = "Search.") -> list[ToolDefinition]:
    # New ToolDefinition objects each time, as every investigation builds its own.
    return [ToolDefinition("search_workflow_catalog", description, schema)]


@pytest.mark.parametrize(
    ("body", "encoded"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "ünïcode ✓"}]}, {}),
        ({"model": "m"}, {"tools": '[{"a": 1}]', "tool_choice": '"auto"'}),
        ({}, {"tools": "[]"}),
    ],
)
def test_encode_body_is_the_json_of_body_with_the_encoded_members(
    body: dict[str, object], encoded: dict[str, str]
) -> None:
    data = encode_body(body, **encoded)
    whole = {**body, **{k: json.loads(v) for k, v in encoded.items()}}
    assert json.loads(data) == whole
    assert data == json.dumps(whole, ensure_ascii=False).encode()  # the same bytes
    assert b"\\u" not in data  # UTF-8 as it is, not escaped


@pytest.mark.parametrize("render", [to_openai_tools, to_anthropic_tools])
def test_a_tool_list_is_encoded_once_and_matches_its_rendering(
    render: Callable[[list[ToolDefinition]], list[dict[str, Any]]],
) -> None:
    encoded = tools_json(render)
    first = encoded(tools())
    assert json.loads(first) == render(tools())
    assert encoded(tools()) is first  # new definitions, same schema object: remembered


def test_an_equal_but_different_schema_or_description_is_encoded_again() -> None:
    encoded = tools_json(to_openai_tools)
    first = encoded(tools())
    copied = encoded(tools(json.loads(json.dumps(SCHEMA))))
    assert copied == first and copied is not first
    described = encoded(tools(description="Search the catalog."))
    assert json.loads(described)[0]["function"]["description"] == "Search the catalog."


def test_remembered_tool_lists_are_bounded_oldest_first() -> None:
    encoded = tools_json(to_openai_tools)
    first = encoded(tools())
    for n in range(64):
        encoded(tools(description=f"Search {n}."))
    assert encoded(tools()) is not first  # evicted, encoded again
    assert len(encoded._known) == 64


async def test_each_attempt_sends_the_conversation_as_it_stands() -> None:
    steps = [Step.error(503), Step.text("done")]
    async with ScriptedLLMServer("openai", script_for=lambda _: steps) as server:
        llm = OpenAICompatibleProvider(
            server.base_url, "m", "sk-test-key", backoff_base=0.01, request_timeout=5
        )
        try:
            messages = [ChatMessage("system", "You are an SRE."), ChatMessage("user", "OOMKilled")]
            response = await llm.complete(messages, tools())
        finally:
            await llm.close()
    assert response.content == "done"
    bodies = [r.json for r in server.requests]
    assert len(bodies) == 2 and bodies[0] == bodies[1]
    assert bodies[0]["tools"] == to_openai_tools(tools())
    assert bodies[0]["tool_choice"] == "auto"
    assert [m["content"] for m in bodies[0]["messages"]] == ["You are an SRE.", "OOMKilled"]


async def test_a_conversation_is_sent_in_the_protocols_shape_the_same_on_every_turn() -> None:
    # Long contents (the system prompt, tool outputs) are encoded once and reused on
    # the next turns and by other conversations; the body must not tell.
    long = 'Investigate ünïcode "quoted" text.\n' * 40
    search = ToolCall("c1", "search_workflow_catalog", '{"query": "OOM"}')
    validate = ToolCall("c2", "validate_workflow_parameters", "{}")
    conversation = [
        ChatMessage("system", long),
        ChatMessage("user", 'OOMKilled in "payments"'),
        ChatMessage("assistant", "", (search,)),
        ChatMessage("tool", long + "!", tool_call_id="c1", name="search_workflow_catalog"),
        ChatMessage("assistant", "Checking ✓", (validate,)),
        ChatMessage("tool", "{}", tool_call_id="c2", name="validate_workflow_parameters"),
        ChatMessage("assistant", '{"done": true}'),
    ]
    expected = [
        {"role": "system", "content": long},
        {"role": "user", "content": 'OOMKilled in "payments"'},
        {
            "role": "assistant",
            "content": None,  # the protocol wants null, not "", beside tool calls
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "search_workflow_catalog",
                        "arguments": '{"query": "OOM"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": long + "!"},
        {
            "role": "assistant",
            "content": "Checking ✓",
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "validate_workflow_parameters", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "{}"},
        {"role": "assistant", "content": '{"done": true}'},
    ]
    async with ScriptedLLMServer("openai", [Step.text("a"), Step.text("b")]) as server:
        llm = OpenAICompatibleProvider(server.base_url, "m", max_retries=0)
        try:
            await llm.complete(conversation, tools())
            await llm.complete(
                [
                    ChatMessage(m.role, m.content, m.tool_calls, m.tool_call_id, m.name)
                    for m in conversation
                ],
                tools(),
            )
        finally:
            await llm.close()
    for sent in server.requests:
        assert sent.json["messages"] == expected
        # As many bytes as json.dumps writes (UTF-8 as it is, not escaped).
        as_dumped = json.dumps(sent.json, ensure_ascii=False).encode()
        assert int(sent.headers["Content-Length"]) == len(as_dumped)
