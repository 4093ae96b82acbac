"""What every HTTP model provider shares: its options, endpoint, client and lifecycle.

`HttpProvider` checks the endpoint and model, builds the `LLMHttpClient`
(with the provider's secrets) from the `HttpOptions` a caller passes as
keywords, and closes it. A provider adds only its wire format: headers,
request body and response parsing. `tools_json` and `encode_body` build that
body without encoding the same tool list on every turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

import aiohttp

from hapi_grpc.adapters.llm.http import LLMHttpClient
from hapi_grpc.domain.llm import LLMResponse, ToolDefinition, ToolListMemo

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["HttpOptions", "HttpProvider", "encode_body", "tools_json"]


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
        headers: Mapping[str, str],
        secrets: Iterable[str],
        params: Mapping[str, str] | None = None,
        **options: Unpack[HttpOptions],
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        self.model = model
        self._url = base_url.rstrip("/") + path
        self._headers = dict(headers)
        self._params = dict(params or {})
        self._http = LLMHttpClient(self.name, model, secrets=secrets, **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self._url!r}, model={self.model!r})"

    def _post(
        self,
        encode: Callable[[], bytes],
        parse: Callable[[Any], LLMResponse],
        *,
        message_count: int,
        tool_count: int,
    ) -> Coroutine[Any, Any, LLMResponse]:
        # Returns the client's coroutine rather than awaiting it: a thousand
        # waiting investigations hold one frame less each.
        return self._http.post_completion(
            self._url,
            encode,
            headers=self._headers,
            params=self._params or None,
            parse=parse,
            message_count=message_count,
            tool_count=tool_count,
        )

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
