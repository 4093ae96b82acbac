"""What every HTTP model provider shares: its options, endpoint, client and lifecycle.

`HttpProvider` checks the endpoint and model, builds the `LLMHttpClient`
(with the provider's secrets) from the `HttpOptions` a caller passes as
keywords, and closes it. A provider adds only its wire format: headers,
request body and response parsing. `ToolsJson` and `encode_body` build that
body without encoding the same tool list on every turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

import aiohttp

from hapi_grpc.adapters.llm.http import LLMHttpClient
from hapi_grpc.domain.llm import LLMResponse, ToolDefinition

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["HttpOptions", "HttpProvider", "ToolsJson", "encode_body"]

# Distinct tool lists remembered per provider: one per toolset combination
# (the catalog alone, with Kubernetes, with each MCP server's tools).
_TOOL_LISTS_KEPT = 64


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


class ToolsJson:
    """The JSON text of a tool list in one provider's format, encoded once per distinct list.

    Every investigation offers the same tools, built on shared schema objects,
    and their schemas are a large part of every request body: encoding them
    once saves that on every turn of every investigation. A list is known by
    its names, descriptions and schema objects; the schemas are held here, so
    a schema's identity cannot be reused while its text is remembered. Schemas
    are read-only once offered (as `ToolDefinition` says).
    """

    __slots__ = ("_known", "_render")

    def __init__(self, render: Callable[[list[ToolDefinition]], list[dict[str, Any]]]) -> None:
        self._render = render
        self._known: dict[tuple[tuple[str, str, int], ...], tuple[tuple[object, ...], str]] = {}

    def __call__(self, tools: list[ToolDefinition]) -> str:
        key = tuple((t.name, t.description, id(t.parameters)) for t in tools)
        known = self._known.get(key)
        if known is None:
            if len(self._known) >= _TOOL_LISTS_KEPT:
                del self._known[next(iter(self._known))]  # the oldest
            text = json.dumps(self._render(tools), ensure_ascii=False)
            known = self._known[key] = (tuple(t.parameters for t in tools), text)
        return known[1]


def encode_body(body: dict[str, Any], **encoded: str) -> bytes:
    """`body` as JSON bytes, with members whose values are JSON text already (`encoded`)."""
    text = json.dumps(body, ensure_ascii=False)
    if encoded:
        members = ",".join(f"{json.dumps(name)}:{value}" for name, value in encoded.items())
        text = f"{text[:-1]}{',' if body else ''}{members}}}"
    return text.encode()
