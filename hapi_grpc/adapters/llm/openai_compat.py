"""`LLMProvider` for the OpenAI Chat Completions protocol.

Design notes: docs/internals.md (`adapters/llm/openai_compat.py`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from json.encoder import encode_basestring as _text  # a str as json.dumps writes it
from typing import TYPE_CHECKING, Any, Literal

from hapi_grpc.adapters.llm.http_provider import HttpOptions, HttpProvider, encode_body, token_usage
from hapi_grpc.domain.errors import LLMResponseError
from hapi_grpc.domain.llm import ChatMessage, LLMResponse, ToolCall, ToolChoice, ToolDefinition

if TYPE_CHECKING:
    from typing_extensions import Unpack


class OpenAICompatibleProvider(HttpProvider):
    """Chat completions with tool calling over the OpenAI wire format."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, str] | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = 2048,
        auth_style: Literal["bearer", "api-key"] = "bearer",
        **options: Unpack[HttpOptions],
    ) -> None:
        if auth_style not in ("bearer", "api-key"):
            raise ValueError("auth_style must be 'bearer' or 'api-key'")
        auth: dict[str, str] = {}
        if api_key:  # local servers (Ollama, llama.cpp) usually need none
            if auth_style == "api-key":
                auth["api-key"] = api_key
            else:
                auth["Authorization"] = f"Bearer {api_key}"
        super().__init__(
            base_url,
            model,
            "/chat/completions",
            api_key=api_key,
            protocol_headers=auth,
            extra_headers=extra_headers,
            extra_query=extra_query,
            temperature=temperature,
            max_tokens=max_tokens,
            render_tools=to_openai_tools,
            parse=parse_openai_response,
            **options,
        )

    def _body(
        self, messages: list[ChatMessage], tools: list[ToolDefinition], tool_choice: ToolChoice
    ) -> bytes:
        body: dict[str, Any] = {"model": self.model}
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if self._max_tokens is not None:
            body["max_tokens"] = self._max_tokens
        messages_json = _messages_json(messages)
        if not tools:
            return encode_body(body, messages=messages_json)
        # tool_choice without tools is rejected by OpenAI, so both or neither.
        # "none" keeps the tools described (the history calls them) and
        # makes the model answer in text.
        body["tool_choice"] = tool_choice
        return encode_body(body, messages=messages_json, tools=self._tools_json(tools))


def to_openai_tools(tools: list[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


# Every turn sends the whole conversation again, and a storm's investigations share
# the system prompt and equal tool outputs: the JSON text of a long content is kept
# (bounded in characters) instead of escaping it again on every request.
_CONTENT_JSON_CHARS = 1 << 20
_LONG_CONTENT = 512
_content_json: dict[str, str] = {}
_content_json_chars = [0]


def _messages_json(messages: list[ChatMessage]) -> str:
    """The conversation as the protocol's `messages` array, JSON text as `json.dumps`
    writes it: `{"role", "content"}`; a tool's answer also its `tool_call_id`; an
    assistant's tool calls in `tool_calls`, its content then null when empty (the
    protocol wants null, not "", beside tool calls)."""
    return "[" + ", ".join(map(_message_json, messages)) + "]"


def _message_json(message: ChatMessage) -> str:
    # Written member by member, so that only the strings are escaped (`_text`), a
    # long content once.
    content = _long_text(message.content)
    if message.role == "tool":
        call_id = _text(message.tool_call_id)
        return f'{{"role": "tool", "tool_call_id": {call_id}, "content": {content}}}'
    if message.role != "assistant" or not message.tool_calls:
        return f'{{"role": {_text(message.role)}, "content": {content}}}'
    calls = ", ".join(
        f'{{"id": {_text(c.id)}, "type": "function", "function": {{"name": {_text(c.name)},'
        f' "arguments": {_text(c.arguments)}}}}}'
        for c in message.tool_calls
    )
    content = content if message.content else "null"
    return f'{{"role": "assistant", "content": {content}, "tool_calls": [{calls}]}}'


def _long_text(text: str) -> str:
    if len(text) < _LONG_CONTENT:
        return _text(text)
    known = _content_json.get(text)
    if known is None:
        known = _content_json[text] = _text(text)
        _content_json_chars[0] += len(known)
        while _content_json_chars[0] > _CONTENT_JSON_CHARS:
            _content_json_chars[0] -= len(_content_json.pop(next(iter(_content_json))))
    return known


def parse_openai_response(data: Any, default_model: str) -> LLMResponse:
    """Turn a chat completion body into an `LLMResponse`; LLMResponseError if it is none."""
    if not isinstance(data, dict):
        raise LLMResponseError("completion is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise LLMResponseError("completion has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise LLMResponseError("completion choice has no message")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise LLMResponseError("tool_calls is not a list")
    calls = tuple(
        _parse_tool_call(raw, index, data.get("id")) for index, raw in enumerate(raw_calls)
    )
    model = data.get("model")
    return LLMResponse(
        content=_text_of(message.get("content")),
        tool_calls=calls,
        usage=token_usage(data, ("prompt_tokens",), "completion_tokens"),
        model=model if isinstance(model, str) and model else default_model,
        finish_reason=str(choices[0].get("finish_reason") or ""),
    )


def _parse_tool_call(raw: Any, index: int, response_id: Any) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        raise LLMResponseError("tool call without a function")
    function = raw["function"]
    name = function.get("name")
    arguments = function.get("arguments")
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        # Some local servers send the arguments as an object, not as JSON text.
        arguments = json.dumps(arguments, ensure_ascii=False)
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = _synthetic_call_id(response_id, index, name, arguments)
    return ToolCall(id=call_id, name=name if isinstance(name, str) else "", arguments=arguments)


def _synthetic_call_id(response_id: Any, index: int, name: Any, arguments: str) -> str:
    """A stable id for a call the server left unnamed (llama.cpp, older Ollama).

    Derived from the response id (when there is one), the call's position and
    content: parsing the same response twice gives the same id, and calls of
    one response never collide.
    """
    seed = json.dumps([response_id, index, name, arguments], ensure_ascii=False)
    return "call_" + hashlib.sha256(seed.encode()).hexdigest()[:24]


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, as some servers answer
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    raise LLMResponseError("message content is neither text nor content parts")
