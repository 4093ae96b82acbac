"""Reading Data Storage answers: a JSON body into its model, RFC 7807 problems.

`parse_body` checks size, content type, JSON and the pydantic model and
raises `ContractViolation` with a short, redacted reason; `problem_text`
reads the title and detail of an error answer.
"""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.sensitive import redact

M = TypeVar("M", bound=BaseModel)

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_PROBLEM_TEXT_MAX = 200
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]+")


class ContractViolation(Exception):
    """Data Storage answered 2xx with a body that breaks its contract."""


def parse_body(raw: bytes, over: bool, content_type: str, model: type[M]) -> M:
    if over:
        raise ContractViolation(f"body is larger than {MAX_RESPONSE_BYTES} bytes")
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime and mime != "application/json" and not mime.endswith("+json"):
        raise ContractViolation(f"content type {clean_text(mime, 60)!r} is not JSON")
    try:
        data = bounded_json.loads(raw, max_bytes=MAX_RESPONSE_BYTES)
    except UnicodeDecodeError:
        raise ContractViolation("body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ContractViolation(f"body is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise ContractViolation(f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ContractViolation(_summarize(exc)) from None


def _summarize(exc: ValidationError, limit: int = 3) -> str:
    """'workflows.0.confidence: Input should be a valid number' (inputs left out)."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = [
        f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}"
        for err in errors[:limit]
    ]
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more problem(s)")
    return "; ".join(parts)


def check_workflow_id(value: BaseModel, workflow_id: str) -> None:
    # A schema for another workflow would validate parameters against the
    # wrong rules; treat it as a broken answer.
    answered = getattr(value, "workflow_id", workflow_id)
    if answered != workflow_id:
        raise ContractViolation(
            f"workflow_id {clean_text(str(answered), 64)!r} does not match the requested id"
        )


def problem_text(raw: bytes) -> tuple[str, str]:
    """Title and detail of an RFC 7807 body, cleaned and truncated; empty if absent."""
    try:
        data = bounded_json.loads(raw, max_bytes=MAX_RESPONSE_BYTES) if raw else None
    except ValueError:
        return "", ""
    if not isinstance(data, dict):
        return "", ""
    title, detail = data.get("title"), data.get("detail")
    return (
        clean_text(title, _PROBLEM_TEXT_MAX) if isinstance(title, str) else "",
        clean_text(detail, _PROBLEM_TEXT_MAX) if isinstance(detail, str) else "",
    )


def clean_text(text: str, limit: int) -> str:
    text = redact(_CONTROL_CHARS.sub(" ", text).strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."
