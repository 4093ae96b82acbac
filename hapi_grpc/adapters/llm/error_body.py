"""What a model provider's error answer says: its message, and whether it is a context overflow.

Providers word their errors differently; these helpers read the common
shapes, so `HttpProvider` can name the provider's own reason (truncated,
then redacted by the caller) and tell "the conversation does not fit" from
a transient server error.
"""

from __future__ import annotations

import json

from hapi_grpc.domain import bounded_json

__all__ = [
    "ERROR_MESSAGE_LIMIT",
    "extract_error_message",
    "http_status_label",
    "is_context_overflow",
    "truncate",
]

ERROR_MESSAGE_LIMIT = 300
# Attempt outcomes by status (the metric's label); other statuses count by class.
_STATUS_LABELS = {429: "rate_limited", 408: "timeout"}

# How providers say "the conversation does not fit the context", as each
# documents or sends it (matched case-insensitively in the error body):
# - llama.cpp server: HTTP 500 "Context size has been exceeded." (older
#   builds), HTTP 400/500 type "exceed_context_size_error" ("the request
#   exceeds the available context size ...");
# - OpenAI and Azure OpenAI: HTTP 400 code "context_length_exceeded", message
#   "This model's maximum context length is N tokens ...";
# - vLLM, LiteLLM and other compatible servers: HTTP 400 "... maximum context
#   length is N tokens ...";
# - Anthropic: HTTP 400 invalid_request_error "prompt is too long: N tokens >
#   M maximum".
# Ollama truncates the prompt silently instead of refusing it.
_CONTEXT_OVERFLOW_MARKERS = (
    "context size has been exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
)


def extract_error_message(body: str) -> str:
    """The human-readable part of a provider's error body, truncated.

    Understands `{"error": {"type", "message"}}` (OpenAI, Anthropic, most
    compatible servers), `{"error": "..."}`, `{"message": "..."}` and
    `{"detail": ...}` (FastAPI-based servers); falls back to the raw text.
    """
    message = body.strip()
    try:
        data = bounded_json.loads(body, max_bytes=len(body) + 1)  # read bounded already
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


def is_context_overflow(status: int, body: str) -> bool:
    """Whether an error answer says the request does not fit the model's context."""
    if status not in (400, 413, 500):
        return False
    text = body.lower()
    return any(marker in text for marker in _CONTEXT_OVERFLOW_MARKERS)


def truncate(text: str, limit: int = ERROR_MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def http_status_label(status: int) -> str:
    if status in _STATUS_LABELS:
        return _STATUS_LABELS[status]
    return "server_error" if status >= 500 else "client_error" if status >= 400 else "error"
