"""What counts as secret, how it is hidden, and how long untrusted text may be.

One vocabulary for every place text leaves the process: log records, stream
events, responses, errors from HTTP clients and messages of the parameter
validator. Nothing here imports outside the standard library, so the domain,
the adapters and observability can all use it.

- `is_secret_name(name)`: a parameter, header or field name whose value is a
  credential. Over-matching (MONKEY) only costs a less helpful message;
  under-matching leaks.
- `redact(text)`: registered secrets (API keys, tokens read from files) and
  anything shaped like a credential become `REDACTED`: bearer tokens, `sk-`
  keys, cloud access keys, JWTs, PEM private keys, credentials in URLs and
  assignments such as `GIT_PASSWORD=...` or `"api_key": "..."`.
- `redact_mapping(value)`: a copy of a JSON-like value in which secret-named
  keys lose their values and every string is passed through `redact`.
- `clip(text, limit)`: caller- or model-controlled text cut to `limit`
  characters with a marker saying how much was cut.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import re2

__all__ = [
    "REDACTED",
    "clip",
    "is_secret_name",
    "redact",
    "redact_mapping",
    "register_secret",
]

REDACTED = "[REDACTED]"
"""Stands in for every hidden value, wherever it was hidden."""

# Substrings of names whose values are never shown.
_SECRET_MARKERS = (
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "PWD",
    "SECRET",
    "TOKEN",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "SESSION",
    "COOKIE",
    "SIGNATURE",
    "CONNECTION_STRING",
    "DSN",
)

# The name part of a `NAME=value` / `"name": "value"` assignment whose value
# must go. Narrower than `_SECRET_MARKERS` on purpose: free text says "key"
# and "session" in harmless ways far more often than parameter names do.
_ASSIGNED_NAME = (
    r"[A-Za-z0-9_.\-]*"
    r"(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API[_\-]?KEY|ACCESS[_\-]?KEY|PRIVATE[_\-]?KEY"
    r"|CREDENTIALS?|AUTH[_\-]?KEY|CLIENT[_\-]?SECRET|CONNECTION[_\-]?STRING)"
    r"[A-Za-z0-9_.\-]*"
)

# Shapes of credentials hidden even if nobody registered them. Each keeps a
# harmless prefix so a reader still sees what kind of thing was there.
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}"), r"\1 " + REDACTED),
    # Basic credentials are base64: demand a digit or base64 punctuation so
    # that prose such as "Basic troubleshooting" stays readable.
    (
        re.compile(r"\b(Basic)\s+(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{12,}={0,2}"),
        r"\1 " + REDACTED,
    ),
    (
        re.compile(r"""(?i)(\b""" + _ASSIGNED_NAME + r"""["']?\s*[:=]\s*["']?)[^\s"'&,;{}\[\]]+"""),
        r"\1" + REDACTED,
    ),
    # Credentials in URLs such as redis://:password@host or https://user:pw@host.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]*:[^/\s@]+@"), r"\1" + REDACTED + "@"),
    (re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), REDACTED),
)

# The words each shape above needs, as plain substrings of the lower-cased
# text: `in` is tens of times faster than a case-insensitive pattern, and a
# shape whose words are absent is not tried (the assignment shape alone costs
# more than all the others). Each word is implied by a match of its shape
# ("connection" by CONNECTION_STRING, "key" by API_KEY, ...), so no match is
# skipped.
_SHAPE_WORDS: tuple[tuple[str, ...], ...] = (
    ("-----begin",),
    ("bearer",),
    ("basic",),
    (
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "key",
        "credential",
        "connection",
    ),
    ("://",),
    ("sk-",),
    ("akia", "asia"),
    tuple(f"gh{c}_" for c in "pousr"),
    tuple(f"xox{c}-" for c in "abposr"),
    ("eyj",),
)
assert len(_SHAPE_WORDS) == len(_SHAPES)
# Each word with the index of its shape, in the order the shapes are tried.
_WORD_SHAPES = tuple((word, index) for index, words in enumerate(_SHAPE_WORDS) for word in words)
# Past this length one automaton pass for all the words at once is cheaper
# than a substring test per word (a tool result of kilobytes: 9 µs, not 50).
_LONG_TEXT = 256
_ANY_WORD = re2.compile("|".join(re.escape(word) for word, _ in _WORD_SHAPES))


def _folded(text: str) -> str:
    """`text` lower-cased so that every ASCII word a case-insensitive pattern
    would find in it is a plain substring.

    Trying every code point shows four non-ASCII characters that such a
    pattern takes for an ASCII letter: the Kelvin sign (`lower()` gives k),
    the dotted capital I (`lower()` gives i plus a combining dot), the dotless
    i and the long s (`lower()` keeps them).
    """
    if text.isascii():
        return text.lower()
    return text.replace("\u0130", "i").lower().replace("\u0131", "i").replace("\u017f", "s")


def _redact_shapes(text: str) -> str:
    lowered = _folded(text)
    if len(lowered) > _LONG_TEXT and _ANY_WORD.search(lowered) is None:
        return text
    tried = 0  # bit i: shape i was applied
    for word, index in _WORD_SHAPES:
        if not tried >> index & 1 and word in lowered:
            tried |= 1 << index
            shape, replacement = _SHAPES[index]
            text = shape.sub(replacement, text)
    return text


_registry_lock = threading.Lock()
_registered: set[str] = set()
_registered_re: re.Pattern[str] | None = None


def register_secret(value: str) -> None:
    """Hide every occurrence of `value` in everything `redact` sees from now on.

    Surrounding whitespace is ignored (secrets read from files often end with
    a newline); empty values are ignored.
    """
    global _registered_re
    value = value.strip()
    if not value:
        return
    with _registry_lock:
        if value in _registered:
            return
        _registered.add(value)
        # Longest first, so a secret that contains another is removed whole.
        ordered = sorted(_registered, key=len, reverse=True)
        _registered_re = re.compile("|".join(re.escape(s) for s in ordered))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with registered secrets, `secrets` and credential shapes replaced."""
    if not text:
        return text
    pattern = _registered_re
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    if secrets:
        for secret in sorted({s for s in secrets if s and s.strip()}, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
    return _redact_shapes(text)


def is_secret_name(name: str) -> bool:
    """True when a parameter, header or field name suggests its value is a secret."""
    upper = name.upper()
    return any(marker in upper for marker in _SECRET_MARKERS)


# Nesting followed when redacting; deeper values are replaced wholesale, so
# hostile nesting stays cheap.
_MAX_DEPTH = 8


def redact_mapping(value: Any, *, depth: int = 0) -> Any:
    """Redacted copy of a JSON-like value: secret-named keys lose their values,
    strings pass through `redact`, anything nested deeper than 8 is replaced."""
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= _MAX_DEPTH:
        return REDACTED
    if isinstance(value, Mapping):
        return {
            str(k): REDACTED if is_secret_name(str(k)) else redact_mapping(v, depth=depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [redact_mapping(v, depth=depth + 1) for v in value]
    return redact(str(value))


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, saying how many were cut.

    The marker is part of the budget only loosely (it adds ~30 characters):
    what matters is that a megabyte never reaches a log line or a response.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more characters cut]"
