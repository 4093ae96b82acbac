"""Structured logging with investigation context and secret redaction.

Design notes: docs/internals.md (`observability/logging.py`).
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import IO, Any, Literal

from hapi_grpc.domain.sensitive import redact, redact_mapping

# --- Context -----------------------------------------------------------------

# The default is an immutable empty mapping: bindings replace it, never mutate it.
_EMPTY: Mapping[str, str] = MappingProxyType({})
_context: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "hapi_log_context", default=_EMPTY
)


def bind_log_context(**fields: str | None) -> contextvars.Token[Mapping[str, str]]:
    """Add `fields` to the log context of the current task; undo with `reset_log_context`.

    A None value removes that field. The mapping is replaced, never mutated, so
    tasks that copied the context earlier keep what they had.
    """
    merged = dict(_context.get())
    for name, value in fields.items():
        if value is None or value == "":
            merged.pop(name, None)
        else:
            merged[name] = str(value)
    return _context.set(merged)


def reset_log_context(token: contextvars.Token[Mapping[str, str]]) -> None:
    _context.reset(token)


class log_context:
    """Bind `fields` (remediation_id, incident_id, trace_id, ...) for the enclosed block.

    A class rather than a generator-based context manager: every call enters
    one and holds it while it waits, and this form is smaller and cheaper.
    """

    __slots__ = ("_fields", "_token")

    def __init__(self, **fields: str | None) -> None:
        self._fields = fields

    def __enter__(self) -> None:
        self._token = bind_log_context(**self._fields)

    def __exit__(self, *exc_info: object) -> None:
        _context.reset(self._token)


# --- Redaction ---------------------------------------------------------------
# What is secret and how it is hidden is decided once, in `domain.sensitive`;
# here it is applied to every part of a record.

# --- Formatting --------------------------------------------------------------

# Attributes every LogRecord has; anything else came from `extra=`.
_RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "hapi_context",
}


class _ContextFilter(logging.Filter):
    """Copies the log context onto the record in the thread that logged it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "hapi_context"):
            record.hapi_context = _context.get()
        return True


# The formatted second, reused by every record logged within it.
_second: tuple[int, str] = (-1, "")


def _timestamp(record: logging.LogRecord) -> str:
    global _second
    whole = int(record.created)
    cached_whole, prefix = _second
    if whole != cached_whole:
        prefix = datetime.fromtimestamp(whole, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second = (whole, prefix)
    millis = min(int((record.created - whole) * 1000), 999)
    return f"{prefix}.{millis:03d}Z"


def _extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {
        k: v for k, v in record.__dict__.items() if k not in _RESERVED and not k.startswith("_")
    }


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # a bad format string must not lose the record
        return f"{record.msg!s} (unformattable arguments)"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, secrets redacted."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(_message(record)),
        }
        context = getattr(record, "hapi_context", None) or _context.get()
        for name, value in context.items():
            entry[name] = redact(value)
        for name, value in _extra_fields(record).items():
            if name not in entry:
                entry[name] = redact_mapping(value)
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        elif record.exc_text:
            entry["exception"] = redact(record.exc_text)
        if record.stack_info:
            entry["stack"] = redact(self.formatStack(record.stack_info))
        return json.dumps(entry, default=_json_default, ensure_ascii=False)


def _json_default(value: Any) -> str:
    return redact(str(value))


class TextFormatter(logging.Formatter):
    """`time LEVEL logger [context] message key=value ...` for local development."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), f"{record.levelname:<7}", record.name]
        context = getattr(record, "hapi_context", None) or _context.get()
        if context:
            parts.append("[" + " ".join(f"{k}={v}" for k, v in context.items()) + "]")
        parts.append(_message(record))
        extras = _extra_fields(record)
        if extras:
            parts.append(
                " ".join(
                    f"{k}={json.dumps(redact_mapping(v), default=str)}" for k, v in extras.items()
                )
            )
        line = redact(" ".join(parts))
        if record.exc_info:
            line += "\n" + redact(self.formatException(record.exc_info))
        if record.stack_info:
            line += "\n" + redact(self.formatStack(record.stack_info))
        return line


_handler: logging.Handler | None = None
_configure_lock = threading.Lock()


def configure_logging(
    level: str = "INFO",
    fmt: Literal["json", "text"] = "json",
    stream: IO[str] | None = None,
) -> None:
    """Send all logging to `stream` (stdout by default) as JSON lines or text.

    Idempotent: a second call replaces the handler installed by the first, so
    there is always exactly one. Raises ValueError for an unknown level/format.
    """
    global _handler
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    if fmt not in ("json", "text"):
        raise ValueError(f"unknown log format {fmt!r} (expected 'json' or 'text')")
    handler = logging.StreamHandler(stream if stream is not None else sys.stdout)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    with _configure_lock:
        if _handler is not None:
            root.removeHandler(_handler)
        root.addHandler(handler)
        root.setLevel(numeric)
        _handler = handler
