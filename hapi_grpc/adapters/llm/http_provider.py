"""What every HTTP model provider shares: its options, endpoint, client and lifecycle.

`HttpProvider` checks the endpoint and model, builds the `LLMHttpClient`
(with the provider's secrets) from the `HttpOptions` a caller passes as
keywords, runs `complete` and closes the client. A provider adds only its
wire format: headers, `_body` and `_parse`. `tools_json` and `encode_body`
build that body without encoding the same tool list on every turn;
`token_usage` reads the usage a response reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import aiohttp

from hapi_grpc.adapters.llm.http import LLMHttpClient, sensitive_values
from hapi_grpc.domain.llm import (
    ChatMessage,
    LLMResponse,
    TokenUsage,
    ToolChoice,
    ToolDefinition,
    ToolListMemo,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["HttpOptions", "HttpProvider", "encode_body", "token_usage", "tools_json"]


class HttpOptions(TypedDict, total=False):
    """Transport options of a provider; see `LLMHttpClient` for their meaning and defaults."""

    request_timeout: float
    connect_timeout: float
    max_retries: int
    backoff_base: float
    max_concurrent_requests: int
    min_attempt_seconds: float
    session: aiohttp.ClientSession | None


class HttpProvider:
    """Base of the providers that POST one JSON completion request per turn."""

    name = "http"
    uses_language_model = True

    def __init__(
        self,
        base_url: str,
        model: str,
        path: str,
        *,
        api_key: str,
        protocol_headers: Mapping[str, str],
        extra_headers: Mapping[str, str] | None,
        extra_query: Mapping[str, str] | None = None,
        temperature: float | None,
        max_tokens: int | None,
        render_tools: Callable[[list[ToolDefinition]], list[dict[str, Any]]],
        **options: Unpack[HttpOptions],
    ) -> None:
        """`protocol_headers` (with the key, when there is one) override the caller's
        `extra_headers`; `render_tools` writes a tool list in the provider's format."""
        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        self.model = model
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._tools_json = tools_json(render_tools)
        self._path = path
        self._headers = {**(extra_headers or {}), **protocol_headers}
        self._params = dict(extra_query or {})
        secrets = [api_key, *sensitive_values(extra_headers), *sensitive_values(extra_query)]
        self._http = LLMHttpClient(self.name, model, base_url, secrets=secrets, **options)

    def __repr__(self) -> str:
        url = self._http.http.base_url + self._path
        return f"{type(self).__name__}(url={url!r}, model={self.model!r})"

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolDefinition],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> LLMResponse:
        # The body is built for each attempt from the conversation, which does
        # not change while it waits: no request body is held meanwhile.
        return await self._http.post_completion(
            self._path,
            lambda: self._body(messages, tools, tool_choice),
            headers=self._headers,
            params=self._params or None,
            parse=self._parse,
            message_count=len(messages),
            tool_count=len(tools),
        )

    def _body(
        self, messages: list[ChatMessage], tools: list[ToolDefinition], tool_choice: ToolChoice
    ) -> bytes:
        """The request body of one attempt, in the provider's wire format."""
        raise NotImplementedError

    def _parse(self, data: Any) -> LLMResponse:
        """The decoded response body as an `LLMResponse`; `LLMResponseError` if it is none."""
        raise NotImplementedError

    async def close(self) -> None:
        await self._http.close()


def tools_json(render: Callable[[list[ToolDefinition]], list[dict[str, Any]]]) -> ToolListMemo[str]:
    """The JSON text of a tool list in one provider's format (`render`), encoded once per
    distinct list: the schemas are a large part of every request body."""
    return ToolListMemo(lambda tools: json.dumps(render(list(tools)), ensure_ascii=False))


def encode_body(body: dict[str, Any], **encoded: str) -> bytes:
    """`body` as JSON bytes, with members whose values are JSON text already (`encoded`)."""
    text = json.dumps(body, ensure_ascii=False)
    if encoded:
        # Keyword names are identifiers: nothing in them needs escaping.
        members = ",".join(f'"{name}":{value}' for name, value in encoded.items())
        text = f"{text[:-1]}{',' if body else ''}{members}}}"
    return text.encode()


def token_usage(data: dict[str, Any], prompt: Sequence[str], completion: str) -> TokenUsage:
    """The usage the response reports: the sum of its `prompt` counts and its `completion`
    count, in its `usage` object; a count that is not a positive integer is 0."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    return TokenUsage(sum(_count(usage.get(key)) for key in prompt), _count(usage.get(completion)))


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(value, 0)
