"""HTTP plumbing shared by the language-model adapters.

Design notes: docs/internals.md (`adapters/llm/http.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import aiohttp

from hapi_grpc.adapters.http import (
    AiohttpTransport,
    HttpClient,
    RequestSlots,
    Response,
    RetryPolicy,
    TransientError,
    parse_retry_after,
)
from hapi_grpc.adapters.llm.error_body import (
    extract_error_message,
    http_status_label,
    is_context_overflow,
    truncate,
)
from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.errors import ContextOverflowError, LLMResponseError, LLMUnavailableError
from hapi_grpc.domain.llm import LLMResponse
from hapi_grpc.domain.sensitive import is_secret_name, redact
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

logger = logging.getLogger("hapi_grpc.adapters.llm")

MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # a completion is kilobytes; this bounds a broken server
_MAX_ERROR_BODY_BYTES = 64 * 1024
# Default bound on model requests in flight: enough for an alert storm of
# 1,000 investigations each waiting on one model turn. Set it to what the
# provider's rate limit allows (HAPI_LLM_MAX_CONCURRENT_REQUESTS).
DEFAULT_MAX_CONCURRENT_REQUESTS = 1000

_TRANSIENT_4XX = frozenset({408, 429})


def llm_retry_policy(
    request_timeout: float,
    max_retries: int,
    backoff_base: float,
    min_attempt_seconds: float = 0.1,
) -> RetryPolicy:
    """The model providers' retry policy.

    Retry-After is honoured up to 60 s: providers' rate-limit windows are
    often a minute. No attempt starts with less than `min_attempt_seconds`
    left (default 0.1 s: no model answers faster; a slow local model needs
    more). A timed-out completion is retried only when the budget still holds
    a full `request_timeout`: a model that used a whole attempt would not
    finish a shorter one, and the retry would only hold the caller.
    """
    return RetryPolicy(
        attempt_timeout=request_timeout,
        max_retries=max_retries,
        backoff_base=backoff_base,
        backoff_cap=30.0,
        retry_after_cap=60.0,
        min_attempt_seconds=min_attempt_seconds,
        retry_timeouts_in_full=True,
    )


def sensitive_values(pairs: Mapping[str, str] | None) -> list[str]:
    """Values of headers or query parameters whose names mark them as credentials."""
    return [v for k, v in (pairs or {}).items() if is_secret_name(k) and v]


class LLMHttpClient:
    """Sends completion requests to one provider endpoint.

    Args:
        provider: provider name for metrics, logs and error messages.
        model: configured model name (metrics label; a closed set in practice).
        base_url: the provider's API root; requests go to paths under it.
        secrets: values that must never appear in errors or logs.
        request_timeout: per-attempt timeout in seconds, clipped to the budget.
        connect_timeout: TCP/TLS connect timeout in seconds.
        max_retries: retries after the first attempt (0..10).
        backoff_base: first backoff in seconds; doubles per retry, with jitter.
        max_concurrent_requests: requests in flight at most (slots); the
            connection pool of the session created here has the same size.
        min_attempt_seconds: no attempt starts with less time than this left
            in the caller's budget (what the slowest useful completion takes).
        session: a shared aiohttp session; closed by its owner, not here.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        base_url: str,
        *,
        secrets: Iterable[str] = (),
        request_timeout: float = 120.0,
        connect_timeout: float = 5.0,
        max_retries: int = 2,
        backoff_base: float = 0.5,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        min_attempt_seconds: float = 0.1,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self._secrets = tuple(s for s in secrets if s and s.strip())
        self.policy = llm_retry_policy(
            request_timeout, max_retries, backoff_base, min_attempt_seconds
        )
        self.slots = RequestSlots(max_concurrent_requests, f"{provider} model requests")
        self.http = HttpClient(
            base_url,
            name=provider,
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
        self._latency = metrics.LLM_LATENCY.labels(provider, model)
        self._prompt_tokens = metrics.LLM_TOKENS.labels(provider, model, "prompt")
        self._completion_tokens = metrics.LLM_TOKENS.labels(provider, model, "completion")

    def redact(self, text: str) -> str:
        """`text` without this client's secrets or anything shaped like a credential."""
        return redact(text, self._secrets)

    async def close(self) -> None:
        """Close the session if this client created it."""
        await self.http.close()

    async def post_completion(
        self,
        path: str,
        encode: Callable[[], bytes],
        *,
        headers: Mapping[str, str],
        parse: Callable[[Any], LLMResponse],
        params: Mapping[str, str] | None = None,
        message_count: int = 0,
        tool_count: int = 0,
    ) -> LLMResponse:
        """POST the JSON body `encode()` builds; return `parse(json_body)` of the first 2xx answer.

        `encode` is called once per attempt, so no body is held while the
        model thinks (a thousand requests in flight would hold megabytes); a
        retry, which is rare, builds it again. `parse` raises `LLMResponseError`
        when the JSON is not a completion.
        """

        def body() -> bytes:
            sent = encode()
            logger.debug(
                "%s request: model=%s messages=%d tools=%d bytes=%d",
                self.provider,
                self.model,
                message_count,
                tool_count,
                len(sent),
            )
            return sent

        with span("llm.complete", provider=self.provider, model=self.model):
            return await self.http.call(
                "POST",
                path,
                lambda response: self._read(response, parse),
                what=f"{self.provider} request",
                fail=lambda message: LLMUnavailableError(self.redact(message)),
                params=params,
                encode=body,
                headers={**headers, "Content-Type": "application/json"},
                limit=MAX_RESPONSE_BYTES,
                error_limit=_MAX_ERROR_BODY_BYTES,
                observe=self._observe,
            )

    def _read(self, resp: Response, parse: Callable[[Any], LLMResponse]) -> LLMResponse:
        """The completion of a 2xx answer; anything else raised as the module says."""
        if resp.ok:
            if resp.over:
                raise LLMResponseError(
                    f"{self.provider} response exceeds {MAX_RESPONSE_BYTES} bytes"
                )
            result = self._parse(resp.body, parse)
            self._record_usage(result)
            return result
        error_text = resp.body.decode("utf-8", "replace")
        reason = self.redact(self._describe_status(resp, error_text))
        if is_context_overflow(resp.status, error_text):
            raise ContextOverflowError(
                f"{self.provider}: the conversation does not fit the model's context: {reason}"
            )
        if resp.status in _TRANSIENT_4XX or resp.status >= 500:
            raise TransientError(reason, parse_retry_after(resp.headers.get("Retry-After")))
        raise LLMUnavailableError(f"{self.provider} request failed: {reason}")

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

    def _parse(self, raw: bytes, parse: Callable[[Any], LLMResponse]) -> LLMResponse:
        try:
            data = bounded_json.loads(raw, max_bytes=MAX_RESPONSE_BYTES)
        except ValueError:
            snippet = truncate(raw.decode("utf-8", "replace").strip(), 100)
            raise LLMResponseError(
                self.redact(f"{self.provider} returned a body that is not JSON: {snippet!r}")
            ) from None
        try:
            return parse(data)
        except LLMResponseError as exc:
            raise LLMResponseError(self.redact(f"{self.provider}: {exc.message}")) from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            # A parser bug on an odd body must still surface as a bad response.
            raise LLMResponseError(
                self.redact(f"{self.provider}: malformed completion ({type(exc).__name__})")
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
            counter = metrics.LLM_REQUESTS.labels(self.provider, self.model, status_label)
            self._requests[status_label] = counter
        return counter

    def _record_usage(self, result: LLMResponse) -> None:
        if result.usage.prompt_tokens > 0:
            self._prompt_tokens.inc(result.usage.prompt_tokens)
        if result.usage.completion_tokens > 0:
            self._completion_tokens.inc(result.usage.completion_tokens)
