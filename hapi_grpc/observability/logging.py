"""Structured logging with investigation context and secret redaction.

`configure_logging()` installs one handler on the root logger that writes one
JSON object per line (or a readable line for local development). Every record
carries the `remediation_id`, `incident_id` and `trace_id` bound with
`log_context()`; the values live in a ContextVar, so they follow an
investigation through every await and into the tasks it starts (asyncio copies
the context into new tasks).

Redaction happens in the formatter, the last step before bytes leave the
process, so it covers records from any library: registered secrets (the LLM API
key, auth tokens) and anything shaped like a bearer token, an `sk-` API key,
an `api_key=` assignment or a password in a URL become `[REDACTED]` in the
message, the arguments, the `extra=` fields and the exception text.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import IO, Any, Literal

REDACTED = "[REDACTED]"
CONTEXT_FIELDS = ("remediation_id", "incident_id", "trace_id")

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


@contextlib.contextmanager
def log_context(**fields: str | None) -> Iterator[None]:
    """Bind `fields` (remediation_id, incident_id, trace_id, ...) for the enclosed block."""
    token = bind_log_context(**fields)
    try:
        yield
    finally:
        _context.reset(token)


def current_log_context() -> Mapping[str, str]:
    return _context.get()


# --- Redaction ---------------------------------------------------------------

# Shapes of credentials that must never be written even if nobody registered
# them. Each keeps its harmless prefix so a reader still sees what was there.
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}"), r"\1 " + REDACTED),
    (
        re.compile(r"""(?i)\b(api[_-]?key["']?\s*[:=]\s*["']?)[^\s"'&,;}\]]+"""),
        r"\1" + REDACTED,
    ),
    # Credentials in URLs such as redis://:password@host or https://user:pw@host.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]*:[^/\s@]+@"), r"\1" + REDACTED + "@"),
    (re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"), REDACTED),
)

_secrets_lock = threading.Lock()
_secrets: set[str] = set()
_secrets_re: re.Pattern[str] | None = None


def register_secret(value: str) -> None:
    """Redact every occurrence of `value` from all log output from now on.

    Surrounding whitespace is ignored (secrets read from files often end with
    a newline); empty values are ignored.
    """
    global _secrets_re
    value = value.strip()
    if not value:
        return
    with _secrets_lock:
        if value in _secrets:
            return
        _secrets.add(value)
        # Longest first, so a secret that contains another is removed whole.
        ordered = sorted(_secrets, key=len, reverse=True)
        _secrets_re = re.compile("|".join(re.escape(s) for s in ordered))


def redact(text: str) -> str:
    """`text` with registered secrets and credential-shaped strings replaced."""
    pattern = _secrets_re
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    for shape, replacement in _SHAPES:
        text = shape.sub(replacement, text)
    return text


_SECRET_NAME = re.compile(r"(?i)PASSWORD|PASSWD|TOKEN|SECRET|KEY|CREDENTIAL")


def is_secret_name(name: str) -> bool:
    """True when a parameter or field name suggests its value is a secret."""
    return bool(_SECRET_NAME.search(name))


def redact_parameters(params: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `params` fit for logging.

    Values of secret-looking names are replaced whole, at any depth; other
    string values are scrubbed like log text.
    """
    return _scrub(params, 0, by_name=True)


_MAX_DEPTH = 8  # parameters and extras are shallow; a bound keeps hostile nesting cheap


def _scrub(value: Any, depth: int, by_name: bool = False) -> Any:
    """Redacted copy of `value`; with `by_name`, secret-named keys lose their values."""
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= _MAX_DEPTH:
        return REDACTED
    if isinstance(value, Mapping):
        return {
            str(k): REDACTED
            if by_name and is_secret_name(str(k))
            else _scrub(v, depth + 1, by_name)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [_scrub(v, depth + 1, by_name) for v in value]
    return redact(str(value))


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


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
                entry[name] = _scrub(value, 0)
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
                " ".join(f"{k}={json.dumps(_scrub(v, 0), default=str)}" for k, v in extras.items())
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


def reset_logging() -> None:
    """Remove the handler `configure_logging()` installed (tests, embedding)."""
    global _handler
    with _configure_lock:
        if _handler is not None:
            logging.getLogger().removeHandler(_handler)
            _handler = None
