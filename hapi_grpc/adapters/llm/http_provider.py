"""What every HTTP model provider shares: its options, endpoint, client and lifecycle.

`HttpProvider` checks the endpoint and model and POSTs one JSON completion
request per turn through the service's `HttpClient`, with everything a
provider would otherwise repeat: a connection pool that matches the
request-slot limit, the retry policy, error mapping to domain errors, metrics
and secret redaction (docs/internals.md). A provider adds only its wire
format: headers, `_body` and its parser. `tools_json` and `encode_body` build
that body without encoding the same tool list on every turn; `token_usage`
reads the usage a response reports.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

import aiohttp

from hapi_grpc.adapters.http.client import HttpClient
from hapi_grpc.adapters.http.retry import (
    RequestSlots,
    RetryPolicy,
    TransientError,
    parse_retry_after,
)
from hapi_grpc.adapters.http.transport import AiohttpTransport, Response
from hapi_grpc.adapters.llm.error_body import (
    extract_error_message,
    http_status_label,
    is_context_overflow,
    truncate,
)
from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.errors import ContextOverflowError, LLMResponseError, LLMUnavailableError
from hapi_grpc.domain.llm import (
    ChatMessage,
    LLMResponse,
    TokenUsage,
    ToolChoice,
    ToolDefinition,
    ToolListMemo,
)
from hapi_grpc.domain.sensitive import is_secret_name, redact
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

__all__ = ["HttpOptions", "HttpProvider", "encode_body", "token_usage", "tools_json"]

logger = logging.getLogger("hapi_grpc.adapters.llm")

MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # a completion is kilobytes; this bounds a broken server
_MAX_ERROR_BODY_BYTES = 64 * 1024
# Default bound on model requests in flight: enough for an alert storm of
# 1,000 investigations each waiting on one model turn. Set it to what the
# provider's rate limit allows (HAPI_LLM_MAX_CONCURRENT_REQUESTS).
DEFAULT_MAX_CONCURRENT_REQUESTS = 1000

_TRANSIENT_4XX = frozenset({408, 429})
# `json.dumps(value, ensure_ascii=False)` without making its encoder on every call.
_dumps = json.JSONEncoder(ensure_ascii=False).encode


class HttpOptions(TypedDict, total=False):
    """Transport options of a provider.

    request_timeout: per-attempt timeout in seconds, clipped to the budget (120).
    connect_timeout: TCP/TLS connect timeout in seconds (5).
    max_retries: retries after the first attempt, 0..10 (2).
    backoff_base: first backoff in seconds; doubles per retry, with jitter (0.5).
    max_concurrent_requests: requests in flight at most (slots); the connection
        pool of the session created here has the same size.
    min_attempt_seconds: no attempt starts with less time than this left in the
        caller's budget (what the slowest useful completion takes; 0.1).
    session: a shared aiohttp session; closed by its owner, not here.
    """

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
        parse: Callable[[Any, str], LLMResponse],
        request_timeout: float = 120.0,
        connect_timeout: float = 5.0,
        max_retries: int = 2,
        backoff_base: float = 0.5,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        min_attempt_seconds: float = 0.1,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        """`protocol_headers` (with the key, when there is one) override the caller's
        `extra_headers`; `render_tools` writes a tool list in the provider's format;
        `parse` reads a decoded response body (and the model asked for) as an
        `LLMResponse`, raising `LLMResponseError` if it is none; the rest are the
        `HttpOptions`."""
        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        self.model = model
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._tools_json = tools_json(render_tools)
        self._parse = parse
        self._path = path
        self._headers = {
            **(extra_headers or {}),
            **protocol_headers,
            "Content-Type": "application/json",
        }
        self._params = dict(extra_query or {}) or None
        # Values of headers or query parameters whose names mark them as credentials.
        named = [*(extra_headers or {}).items(), *(extra_query or {}).items()]
        secrets = [api_key, *(v for k, v in named if is_secret_name(k))]
        self._secrets = tuple(s for s in secrets if s and s.strip())
        # Retry-After is honoured up to 60 s: providers' rate-limit windows are often a
        # minute. No attempt starts with less than `min_attempt_seconds` left (no model
        # answers faster; a slow local model needs more). A timed-out completion is
        # retried only when the budget still holds a full `request_timeout`: a model that
        # used a whole attempt would not finish a shorter one, and the retry would only
        # hold the caller.
        self.policy = RetryPolicy(
            attempt_timeout=request_timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_cap=30.0,
            retry_after_cap=60.0,
            min_attempt_seconds=min_attempt_seconds,
            retry_timeouts_in_full=True,
        )
        self.slots = RequestSlots(max_concurrent_requests, f"{self.name} model requests")
        self.http = HttpClient(
            base_url,
            name=self.name,
            timeout=request_timeout,
            connect_timeout=connect_timeout,
            retry=self.policy,
            slots=self.slots,
            # As many connections as request slots: a request holding a slot
            # never queues again inside the pool.
            transport=AiohttpTransport(
                max_connections=self.slots.limit, backstop=request_timeout, session=session
            ),
        )
        # Labelled metrics resolved once: `labels()` takes a lock on every call.
        self._requests: dict[str, Any] = {}
        self._latency = metrics.LLM_LATENCY.labels(self.name, model)
        self._prompt_tokens = metrics.LLM_TOKENS.labels(self.name, model, "prompt")
        self._completion_tokens = metrics.LLM_TOKENS.labels(self.name, model, "completion")

    def __repr__(self) -> str:
        url = self.http.base_url + self._path
        return f"{type(self).__name__}(url={url!r}, model={self.model!r})"

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolDefinition],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> LLMResponse:
        # The body is built for each attempt from the conversation, which does
        # not change while it waits: no request body is held meanwhile (a
        # thousand requests in flight would hold megabytes).
        def body() -> bytes:
            sent = self._body(messages, tools, tool_choice)
            logger.debug(
                "%s request: model=%s messages=%d tools=%d bytes=%d",
                self.name,
                self.model,
                len(messages),
                len(tools),
                len(sent),
            )
            return sent

        with span("llm.complete", provider=self.name, model=self.model):
            return await self.http.call(
                "POST",
                self._path,
                self._read,
                what=f"{self.name} request",
                fail=lambda message: LLMUnavailableError(self.redact(message)),
                params=self._params,
                encode=body,
                headers=self._headers,
                limit=MAX_RESPONSE_BYTES,
                error_limit=_MAX_ERROR_BODY_BYTES,
                observe=self._observe,
            )

    def _body(
        self, messages: list[ChatMessage], tools: list[ToolDefinition], tool_choice: ToolChoice
    ) -> bytes:
        """The request body of one attempt, in the provider's wire format."""
        raise NotImplementedError

    def redact(self, text: str) -> str:
        """`text` without this provider's secrets or anything shaped like a credential."""
        return redact(text, self._secrets)

    async def close(self) -> None:
        """Close the session if this provider created it."""
        await self.http.close()

    def _read(self, resp: Response) -> LLMResponse:
        """The completion of a 2xx answer; anything else raised as the module says."""
        if resp.ok:
            if resp.over:
                raise LLMResponseError(f"{self.name} response exceeds {MAX_RESPONSE_BYTES} bytes")
            result = self._completion(resp.body)
            # `token_usage` reads no count below 0.
            self._prompt_tokens.inc(result.usage.prompt_tokens)
            self._completion_tokens.inc(result.usage.completion_tokens)
            return result
        error_text = resp.body.decode("utf-8", "replace")
        reason = self.redact(self._describe_status(resp, error_text))
        if is_context_overflow(resp.status, error_text):
            raise ContextOverflowError(
                f"{self.name}: the conversation does not fit the model's context: {reason}"
            )
        if resp.status in _TRANSIENT_4XX or resp.status >= 500:
            raise TransientError(reason, parse_retry_after(resp.headers.get("Retry-After")))
        raise LLMUnavailableError(f"{self.name} request failed: {reason}")

    def _observe(self, resp: Response | None, error: BaseException | None, seconds: float) -> None:
        """Counts each attempt by outcome (`ok`, the status class, `timeout`, ...)."""
        if isinstance(error, asyncio.CancelledError):
            label = "cancelled"
        elif isinstance(error, TimeoutError):
            label = "timeout"
        elif resp is not None and not resp.ok:
            label = http_status_label(resp.status)
        else:
            label = "ok" if resp is not None and error is None else "error"
        self._requests_counter(label).inc()
        self._latency.observe(seconds)

    def _completion(self, raw: bytes) -> LLMResponse:
        try:
            data = bounded_json.loads(raw, max_bytes=MAX_RESPONSE_BYTES)
        except ValueError:
            snippet = truncate(raw.decode("utf-8", "replace").strip(), 100)
            raise LLMResponseError(
                self.redact(f"{self.name} returned a body that is not JSON: {snippet!r}")
            ) from None
        try:
            return self._parse(data, self.model)
        except LLMResponseError as exc:
            raise LLMResponseError(self.redact(f"{self.name}: {exc.message}")) from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            # A parser bug on an odd body must still surface as a bad response.
            raise LLMResponseError(
                self.redact(f"{self.name}: malformed completion ({type(exc).__name__})")
            ) from None

    def _describe_status(self, resp: Response, body: str) -> str:
        reason = f"HTTP {resp.status}"
        message = extract_error_message(body) if body.strip() else (resp.reason or "")
        if message:
            reason += f": {message}"
        request_id = resp.headers.get("request-id") or resp.headers.get("x-request-id")
        if request_id:
            reason += f" (request id {truncate(request_id, 80)})"
        return reason

    def _requests_counter(self, status_label: str) -> Any:
        counter = self._requests.get(status_label)
        if counter is None:
            counter = metrics.LLM_REQUESTS.labels(self.name, self.model, status_label)
            self._requests[status_label] = counter
        return counter


def tools_json(render: Callable[[list[ToolDefinition]], list[dict[str, Any]]]) -> ToolListMemo[str]:
    """The JSON text of a tool list in one provider's format (`render`), encoded once per
    distinct list: the schemas are a large part of every request body."""
    return ToolListMemo(lambda tools: _dumps(render(list(tools))))


def encode_body(body: dict[str, Any], **encoded: str) -> bytes:
    """`body` as JSON bytes, with members whose values are JSON text already (`encoded`),
    after its own: the bytes `json.dumps` writes for `{**body, **decoded}`."""
    text = _dumps(body)
    if encoded:
        # Keyword names are identifiers: nothing in them needs escaping.
        members = ", ".join(f'"{name}": {value}' for name, value in encoded.items())
        text = f"{text[:-1]}{', ' if body else ''}{members}}}"
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
