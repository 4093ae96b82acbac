"""HTTP plumbing shared by the language-model adapters.

`LLMHttpClient` POSTs one JSON completion request with everything a provider
adapter would otherwise repeat: one lazily created aiohttp session, per-attempt
timeouts clipped to the caller's budget (`hapi_grpc.domain.deadline`), retries
of transient failures with exponential backoff and jitter, `Retry-After`,
error mapping to domain errors, metrics, and secret redaction.

Failure policy:

- Transient: timeouts, connection errors, HTTP 408, 429 and 5xx (Anthropic's
  529 "overloaded" included). Retried at most `max_retries` times.
- Anything else that is not 2xx (400/401/403/404/422, redirects) fails at once.
- `LLMUnavailableError` when the provider cannot answer. Its message names the
  provider, the HTTP status and the provider's own error message, redacted.
- `LLMResponseError` when a 2xx body is not a valid completion. Not retried:
  the same request would most likely get the same answer.
- `BudgetExhaustedError` when the caller's deadline leaves no time for an
  attempt, or ends one (a timeout that the budget shortened).
- If a retry wait (backoff or `Retry-After`) would not leave time for another
  attempt within the budget, the call fails at once with `LLMUnavailableError`
  carrying the provider's last error: the provider, not the deadline, is what
  went wrong, and sleeping into the deadline would only hide that.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import aiohttp

from hapi_grpc.adapters.retry import full_jitter, parse_retry_after
from hapi_grpc.domain.deadline import current_budget, request_timeout
from hapi_grpc.domain.errors import BudgetExhaustedError, LLMResponseError, LLMUnavailableError
from hapi_grpc.domain.llm import LLMResponse
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

logger = logging.getLogger("hapi_grpc.adapters.llm")

REDACTED = "[REDACTED]"
ERROR_MESSAGE_LIMIT = 300
MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # a completion is kilobytes; this bounds a broken server
_MAX_ERROR_BODY_BYTES = 64 * 1024
_MAX_RETRIES_LIMIT = 10
_BACKOFF_CAP = 30.0
# Longest Retry-After honoured when the caller set no deadline.
_RETRY_AFTER_CAP = 60.0
# A retry is pointless if less than this is left of the budget after the wait.
_MIN_ATTEMPT_SECONDS = 0.1
_READ_CHUNK = 64 * 1024
# A timeout within this much of the budget's end is the budget's doing.
_BUDGET_SLACK = 0.05

_TRANSIENT_4XX = frozenset({408, 429})
_GENERIC_SECRET_PATTERNS = (
    (re.compile(r"Bearer\s+\S+", re.IGNORECASE), f"Bearer {REDACTED}"),
    (re.compile(r"sk-[A-Za-z0-9_-]{8,}"), REDACTED),
)
# Header / query names whose values are credentials.
_SENSITIVE_NAME = re.compile(r"auth|key|token|secret|password|signature", re.IGNORECASE)


class Redactor:
    """Removes credentials from text bound for exceptions and logs.

    It scrubs the configured secrets verbatim plus anything that looks like a
    bearer token or an OpenAI-style `sk-` key, whatever its origin: providers
    sometimes echo the key they rejected in their error message.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a secret that contains another is removed whole.
        self._secrets = sorted({s for s in secrets if s and s.strip()}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        for pattern, replacement in _GENERIC_SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text


def sensitive_values(pairs: Mapping[str, str] | None) -> list[str]:
    """Values of headers or query parameters whose names mark them as credentials."""
    return [v for k, v in (pairs or {}).items() if _SENSITIVE_NAME.search(k) and v]


def extract_error_message(body: str) -> str:
    """The human-readable part of a provider's error body, truncated.

    Understands `{"error": {"type", "message"}}` (OpenAI, Anthropic, most
    compatible servers), `{"error": "..."}`, `{"message": "..."}` and
    `{"detail": ...}` (FastAPI-based servers); falls back to the raw text.
    """
    message = body.strip()
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            text = error.get("message")
            kind = error.get("type") or error.get("code")
            if isinstance(text, str) and text:
                message = f"{kind}: {text}" if isinstance(kind, str) and kind else text
        elif isinstance(error, str) and error:
            message = error
        elif isinstance(data.get("message"), str) and data["message"]:
            message = data["message"]
        elif data.get("detail"):
            detail = data["detail"]
            message = detail if isinstance(detail, str) else json.dumps(detail)
    return truncate(" ".join(message.split()))


def truncate(text: str, limit: int = ERROR_MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _status_label(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server_error"
    if 400 <= status < 500:
        return "client_error"
    return "error"


class _Transient(Exception):
    """An attempt failed in a way worth retrying (internal)."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class LLMHttpClient:
    """Sends completion requests to one provider endpoint.

    Args:
        provider: provider name for metrics, logs and error messages.
        model: configured model name (metrics label; a closed set in practice).
        secrets: values that must never appear in errors or logs.
        request_timeout: per-attempt timeout in seconds, clipped to the budget.
        connect_timeout: TCP/TLS connect timeout in seconds.
        max_retries: retries after the first attempt (0..10).
        backoff_base: first backoff in seconds; doubles per retry, with jitter.
        session: a shared aiohttp session; closed by its owner, not here.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        *,
        secrets: Iterable[str] = (),
        request_timeout: float = 120.0,
        connect_timeout: float = 5.0,
        max_retries: int = 2,
        backoff_base: float = 0.5,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        if request_timeout <= 0 or connect_timeout <= 0:
            raise ValueError("timeouts must be positive")
        if not 0 <= max_retries <= _MAX_RETRIES_LIMIT:
            raise ValueError(f"max_retries must be within 0..{_MAX_RETRIES_LIMIT}")
        if backoff_base < 0:
            raise ValueError("backoff_base must not be negative")
        self.provider = provider
        self.model = model
        self.redact = Redactor(secrets)
        self._request_timeout = request_timeout
        self._connect_timeout = connect_timeout
        self._max_retries = max_retries
        self._backoff_base = backoff_base
        self._session = session
        self._owns_session = session is None

    def _get_session(self) -> aiohttp.ClientSession:
        # Created on first use so it binds to the loop that runs the requests.
        if self._session is None or self._session.closed:
            if not self._owns_session:
                raise LLMUnavailableError(f"{self.provider}: the shared HTTP session is closed")
            self._session = aiohttp.ClientSession()
        return self._session

    async def close(self) -> None:
        """Close the session if this client created it."""
        if self._owns_session and self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def post_completion(
        self,
        url: str,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str],
        parse: Callable[[Any], LLMResponse],
        params: Mapping[str, str] | None = None,
        message_count: int = 0,
        tool_count: int = 0,
    ) -> LLMResponse:
        """POST `body` and return `parse(json_body)` of the first 2xx answer.

        `parse` raises `LLMResponseError` when the JSON is not a completion.
        """
        with span("llm.complete", provider=self.provider, model=self.model):
            payload = json.dumps(body, ensure_ascii=False).encode()
            logger.debug(
                "%s request: model=%s messages=%d tools=%d bytes=%d",
                self.provider,
                self.model,
                message_count,
                tool_count,
                len(payload),
            )
            attempts = self._max_retries + 1
            for attempt in range(attempts):
                try:
                    return await self._attempt(url, payload, headers, params, parse)
                except _Transient as exc:
                    failure = exc
                # Raised outside the except block: an implicit __context__ would
                # carry the unredacted reason into tracebacks.
                if attempt + 1 >= attempts:
                    raise LLMUnavailableError(
                        self.redact(
                            f"{self.provider} request failed after {attempts} attempt(s): "
                            f"{failure.reason}"
                        )
                    )
                delay = self._retry_delay(attempt, failure)
                logger.info(
                    "%s: retrying in %.2fs after %s (retry %d of %d)",
                    self.provider,
                    delay,
                    self.redact(failure.reason),
                    attempt + 1,
                    self._max_retries,
                )
                await asyncio.sleep(delay)
            raise AssertionError("unreachable: the last attempt returns or raises")

    def _retry_delay(self, attempt: int, failure: _Transient) -> float:
        """The wait before the next attempt; raises if it cannot fit the budget."""
        if failure.retry_after is not None:
            delay = failure.retry_after
            if delay > _RETRY_AFTER_CAP:
                raise LLMUnavailableError(
                    self.redact(
                        f"{self.provider} request failed: {failure.reason}; "
                        f"Retry-After {delay:.1f}s is longer than {_RETRY_AFTER_CAP:.0f}s"
                    )
                )
        else:
            delay = full_jitter(attempt + 1, self._backoff_base, _BACKOFF_CAP)
        budget = current_budget()
        if budget is not None:
            left = budget.remaining()
            if delay + _MIN_ATTEMPT_SECONDS >= left:
                wait = (
                    f"Retry-After {delay:g}s"
                    if failure.retry_after is not None
                    else f"backoff {delay:.2f}s"
                )
                raise LLMUnavailableError(
                    self.redact(
                        f"{self.provider} request failed: {failure.reason}; no time to retry "
                        f"({wait} exceeds the remaining budget of {max(left, 0):.2f}s)"
                    )
                )
        return delay

    async def _attempt(
        self,
        url: str,
        payload: bytes,
        headers: Mapping[str, str],
        params: Mapping[str, str] | None,
        parse: Callable[[Any], LLMResponse],
    ) -> LLMResponse:
        timeout = request_timeout(self._request_timeout)  # BudgetExhaustedError propagates
        clipped_by_budget = timeout < self._request_timeout
        session = self._get_session()
        started = time.monotonic()
        status_label = "error"
        try:
            async with asyncio.timeout(timeout):
                async with session.post(
                    url,
                    data=payload,
                    headers={**headers, "Content-Type": "application/json"},
                    params=params,
                    # The whole attempt is bounded by asyncio.timeout above;
                    # this one only fails fast on an unreachable host.
                    timeout=aiohttp.ClientTimeout(
                        total=None, sock_connect=min(self._connect_timeout, timeout)
                    ),
                    # Never follow redirects: custom auth headers (x-api-key,
                    # api-key) would be replayed to whatever host they name.
                    allow_redirects=False,
                ) as resp:
                    if 200 <= resp.status < 300:
                        raw = await _read_bounded(resp, MAX_RESPONSE_BYTES)
                        if raw is None:
                            raise LLMResponseError(
                                f"{self.provider} response exceeds {MAX_RESPONSE_BYTES} bytes"
                            )
                        result = self._parse(raw, parse)
                        status_label = "ok"
                        self._record_usage(result)
                        return result
                    status_label = _status_label(resp.status)
                    error_body = await _read_bounded(resp, _MAX_ERROR_BODY_BYTES, cut=True) or b""
                    reason = self._describe_status(resp, error_body.decode("utf-8", "replace"))
                    if resp.status in _TRANSIENT_4XX or resp.status >= 500:
                        raise _Transient(reason, parse_retry_after(resp.headers.get("Retry-After")))
                    raise LLMUnavailableError(
                        self.redact(f"{self.provider} request failed: {reason}")
                    )
        except asyncio.CancelledError:
            status_label = "cancelled"
            raise
        except TimeoutError:
            status_label = "timeout"
            budget = current_budget()
            if clipped_by_budget and budget is not None and budget.remaining() < _BUDGET_SLACK:
                raise BudgetExhaustedError(
                    f"{self.provider} request did not finish before the deadline ({timeout:.2f}s)"
                ) from None
            raise _Transient(f"timed out after {timeout:.2f}s") from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            status_label = "error"
            # `from None`: the cause's text is unredacted and may name the URL.
            raise _Transient(f"connection error: {type(exc).__name__}: {exc}") from None
        except aiohttp.ClientError as exc:
            status_label = "error"
            raise LLMUnavailableError(
                self.redact(f"{self.provider} request failed: {type(exc).__name__}: {exc}")
            ) from None
        finally:
            metrics.LLM_REQUESTS.labels(self.provider, self.model, status_label).inc()
            elapsed = time.monotonic() - started
            metrics.LLM_LATENCY.labels(self.provider, self.model).observe(elapsed)

    def _parse(self, raw: bytes, parse: Callable[[Any], LLMResponse]) -> LLMResponse:
        try:
            data = json.loads(raw)
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

    def _describe_status(self, resp: aiohttp.ClientResponse, body: str) -> str:
        reason = f"HTTP {resp.status}"
        message = extract_error_message(body) if body.strip() else (resp.reason or "")
        if message:
            reason += f": {message}"
        request_id = resp.headers.get("request-id") or resp.headers.get("x-request-id")
        if request_id:
            reason += f" (request id {truncate(request_id, 80)})"
        return reason

    def _record_usage(self, result: LLMResponse) -> None:
        if result.usage.prompt_tokens > 0:
            metrics.LLM_TOKENS.labels(self.provider, self.model, "prompt").inc(
                result.usage.prompt_tokens
            )
        if result.usage.completion_tokens > 0:
            metrics.LLM_TOKENS.labels(self.provider, self.model, "completion").inc(
                result.usage.completion_tokens
            )


async def _read_bounded(
    resp: aiohttp.ClientResponse, limit: int, *, cut: bool = False
) -> bytes | None:
    """At most `limit` bytes of the body: cut there, or None when `cut` is False."""
    chunks: list[bytes] = []
    size = 0
    # Bounded: every pass adds at least one byte, and the loop stops past `limit`.
    while size <= limit:
        chunk = await resp.content.read(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:limit] if cut else None
