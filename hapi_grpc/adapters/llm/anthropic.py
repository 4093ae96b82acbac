"""`LLMProvider` for the Anthropic Messages API (`POST /v1/messages`).

Design notes: docs/internals.md (`adapters/llm/anthropic.py`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hapi_grpc.adapters.llm.http_provider import HttpOptions, HttpProvider, encode_body, token_usage
from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.errors import LLMResponseError
from hapi_grpc.domain.llm import ChatMessage, LLMResponse, ToolCall, ToolChoice, ToolDefinition
from hapi_grpc.domain.toolsets.jsontext import MAX_ARGUMENT_BYTES

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_MODEL = "claude-haiku-4-5"
DEFAULT_MAX_TOKENS = 2048
_TOOL_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# Cached prompt tokens are reported apart from input_tokens; all were read.
_PROMPT_TOKENS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class AnthropicProvider(HttpProvider):
    """Claude models with tool use over the Messages API."""

    name = "anthropic"

    def __init__(
        self,
        base_url: str = "https://api.anthropic.com",
        model: str = DEFAULT_MODEL,
        api_key: str = "",
        *,
        anthropic_version: str = "2023-06-01",
        extra_headers: Mapping[str, str] | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = 2048,
        **options: Unpack[HttpOptions],
    ) -> None:
        if max_tokens is None:
            max_tokens = DEFAULT_MAX_TOKENS  # the Messages API requires a limit
        if max_tokens < 1:
            raise ValueError("max_tokens must be positive")
        if temperature is not None and not 0.0 <= temperature <= 1.0:
            # The API rejects anything else; fail at startup, not on every request.
            raise ValueError("temperature must be within 0..1 for Anthropic")
        headers = {"anthropic-version": anthropic_version}
        if api_key:
            headers["x-api-key"] = api_key
        super().__init__(
            base_url,
            model,
            "/v1/messages",
            api_key=api_key,
            protocol_headers=headers,
            extra_headers=extra_headers,
            temperature=temperature,
            max_tokens=max_tokens,
            render_tools=to_anthropic_tools,
            parse=parse_anthropic_response,
            **options,
        )

    def _body(
        self, messages: list[ChatMessage], tools: list[ToolDefinition], tool_choice: ToolChoice
    ) -> bytes:
        system, wire_messages = to_anthropic_messages(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._max_tokens,
            "messages": wire_messages,
        }
        if system:
            body["system"] = system
        if self._temperature is not None:
            body["temperature"] = self._temperature
        if not tools:
            return encode_body(body)
        # The tools stay described even when none may be called: a request
        # whose history holds tool_use blocks must define them.
        if tool_choice == "none":
            body["tool_choice"] = {"type": "none"}
        return encode_body(body, tools=self._tools_json(tools))


def to_anthropic_tools(tools: list[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        for tool in tools
    ]


def to_anthropic_messages(messages: list[ChatMessage]) -> tuple[str, list[dict[str, Any]]]:
    """The `system` text and the alternating user/assistant messages."""
    system_parts: list[str] = []
    wire: list[dict[str, Any]] = []

    def append(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return  # an empty turn is rejected; dropping it lets neighbours merge
        if wire and wire[-1]["role"] == role:
            merged = wire[-1]["content"]
            if blocks[0]["type"] == "tool_result":
                # tool_result blocks must lead their user message, in call order.
                at = next(
                    (i for i, b in enumerate(merged) if b["type"] != "tool_result"), len(merged)
                )
                merged[at:at] = blocks
            else:
                merged.extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "system":
            if message.content:
                system_parts.append(message.content)
        elif message.role == "user":
            append("user", _text_blocks(message.content))
        elif message.role == "assistant":
            blocks = _text_blocks(message.content)
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": _tool_id(call.id),
                    "name": call.name,
                    "input": _input_object(call.arguments),
                }
                for call in message.tool_calls
            )
            append("assistant", blocks)
        else:  # tool
            append(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": _tool_id(message.tool_call_id),
                        "content": message.content,
                    }
                ],
            )
    return "\n\n".join(system_parts), wire


def _text_blocks(text: str) -> list[dict[str, Any]]:
    # The API rejects empty text blocks.
    return [{"type": "text", "text": text}] if text.strip() else []


def _input_object(arguments: str) -> dict[str, Any]:
    try:
        value = bounded_json.loads(arguments, max_bytes=MAX_ARGUMENT_BYTES) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_id(call_id: str) -> str:
    """The id as the API accepts it (`^[a-zA-Z0-9_-]+$`).

    Ids minted by another provider or by the engine may not fit; they are
    mapped to a hash, the same on the `tool_use` and the `tool_result` side,
    so the pair still matches.
    """
    if _TOOL_ID.match(call_id):
        return call_id
    return "toolu_" + hashlib.sha256(call_id.encode()).hexdigest()[:24]


def parse_anthropic_response(data: Any, default_model: str) -> LLMResponse:
    """Turn a Messages API body into an `LLMResponse`; LLMResponseError if it is none."""
    if not isinstance(data, dict):
        raise LLMResponseError("response is not a JSON object")
    content = data.get("content")
    if not isinstance(content, list):
        raise LLMResponseError("response has no content blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, dict):
            raise LLMResponseError("content block is not an object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
                raise LLMResponseError("tool_use block without id or name")
            tool_input = block.get("input", {})
            # A string here is already JSON text (some proxies relay it so): keep it raw.
            arguments = (
                tool_input
                if isinstance(tool_input, str)
                else json.dumps(tool_input, ensure_ascii=False)
            )
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
        # thinking and other block types carry nothing the engine uses
    model = data.get("model")
    return LLMResponse(
        content="\n".join(texts),
        tool_calls=tuple(calls),
        usage=token_usage(data, _PROMPT_TOKENS, "output_tokens"),
        model=model if isinstance(model, str) and model else default_model,
        finish_reason=str(data.get("stop_reason") or ""),
    )
