"""What every HTTP model provider shares: its options, endpoint, client and lifecycle.

`HttpProvider` checks the endpoint and model, builds the `LLMHttpClient`
(with the provider's secrets) from the `HttpOptions` a caller passes as
keywords, and closes it. A provider adds only its wire format: headers,
request body and response parsing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

import aiohttp

from hapi_grpc.adapters.llm.http import LLMHttpClient
from hapi_grpc.domain.llm import LLMResponse

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["HttpOptions", "HttpProvider"]


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

    async def _post(
        self,
        body: dict[str, Any],
        parse: Callable[[Any], LLMResponse],
        *,
        message_count: int,
        tool_count: int,
    ) -> LLMResponse:
        return await self._http.post_completion(
            self._url,
            body,
            headers=self._headers,
            params=self._params or None,
            parse=parse,
            message_count=message_count,
            tool_count=tool_count,
        )

    async def close(self) -> None:
        await self._http.close()
