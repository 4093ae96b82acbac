"""What counts as secret, how it is hidden, and how long untrusted text may be.

Design notes: docs/internals.md (`domain/sensitive.py`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import re2

from hapi_grpc.domain.credential_shapes import (
    REDACTED,
    SHAPE_WORDS,
    Shape,
    folded,
    redact_shapes,
    substitute,
)

__all__ = [
    "REDACTED",
    "clip",
    "hides_value",
    "is_secret_name",
    "needs_redaction",
    "redact",
    "redact_head",
    "redact_mapping",
    "redaction_generation",
    "register_secret",
    "replace_secrets",
    "utf8_safe",
]


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
# For `needs_redaction`: the markers over upper-cased text, and with the words of the
# credential shapes over folded text (one pass; the markers alone decide only for ASCII).
_MARKERS = re2.compile(b"|".join(m.encode() for m in _SECRET_MARKERS))
_WORDS = re2.compile(
    b"|".join(re2.escape(w.encode()) for w in (*SHAPE_WORDS, *(m.lower() for m in _SECRET_MARKERS)))
)

# The registry of known secret values. Bounded: a value registered for an
# `owner` (one token file, one set of cluster credentials) replaces that
# owner's previous values, so a rotated or revoked token is forgotten at once;
# values without an owner are kept for the most recent `_MAX_REGISTERED`.
_MAX_REGISTERED = 256
_registry_lock = threading.Lock()
_owned: dict[str, frozenset[str]] = {}
_anonymous: dict[str, None] = {}  # insertion order = least recently registered first
# Values up to this long share one RE2 pattern (a few hundred of them compile
# in milliseconds); longer ones, rare (service-account JWTs), are replaced one
# by one, which keeps the pattern small whatever a token file holds.
_PATTERN_VALUE_CHARS = 256
# The shorter registered values in one pattern, and as text when they are few: a
# text holding none of them (nearly every text) is told by `in` faster than by a
# call to the pattern. One tuple, replaced whole, so a reader sees both of one set.
_registered: tuple[Shape, tuple[str, ...] | None] | None = None
_FEW = 8
_registered_long: tuple[str, ...] = ()  # the longer ones, longest first
_longest_registered = 0
_generation = 0  # changes whenever the registered values do
# Whether a registered value holds a character JSON escapes (`needs_redaction`).
_registered_escaped = False


def register_secret(value: str, *, owner: str | None = None) -> None:
    """Hide every occurrence of `value` in everything `redact` sees from now on.

    With an `owner`, `value` replaces what that owner registered before (a
    token re-read from its file after rotation drops the old one). Surrounding
    whitespace is ignored (secrets read from files often end with a newline);
    empty values are ignored.
    """
    if owner is not None:
        replace_secrets(owner, (value,))
        return
    value = utf8_safe(value.strip())
    if not value:
        return
    with _registry_lock:
        if value in _anonymous:
            _anonymous[value] = _anonymous.pop(value)  # recently used again
            return
        _anonymous[value] = None
        while len(_anonymous) > _MAX_REGISTERED:
            del _anonymous[next(iter(_anonymous))]
        _recompile()


def replace_secrets(owner: str, values: Iterable[str]) -> None:
    """Make `values` the only secrets registered for `owner` (none forgets it).

    At most `_MAX_REGISTERED` values are kept for one owner.
    """
    kept = frozenset(v for v in (utf8_safe(s.strip()) for s in values) if v)
    if len(kept) > _MAX_REGISTERED:
        kept = frozenset(sorted(kept, key=len, reverse=True)[:_MAX_REGISTERED])
    with _registry_lock:
        if _owned.get(owner, frozenset()) == kept:
            return
        if kept:
            _owned[owner] = kept
        else:
            _owned.pop(owner, None)
        _recompile()


def _all_registered() -> set[str]:
    every = set(_anonymous)
    for values in _owned.values():
        every |= values
    return every


def redaction_generation() -> int:
    """A number that changes whenever the registered secrets do: what `redact` gave a
    text may be kept and reused while it stays the same."""
    return _generation


def _recompile() -> None:
    """Rebuild the one pattern of registered values; the caller holds the lock."""
    global _registered, _registered_long, _longest_registered, _generation, _registered_escaped
    # Longest first, so a secret that contains another is removed whole.
    ordered = sorted(_all_registered(), key=len, reverse=True)
    short = [s for s in ordered if len(s) <= _PATTERN_VALUE_CHARS]
    source = b"|".join(re2.escape(s.encode()) for s in short)
    few = tuple(short) if len(short) <= _FEW else None
    _registered = (Shape(re2.compile(source)), few) if short else None
    _registered_long = tuple(s for s in ordered if len(s) > _PATTERN_VALUE_CHARS)
    _longest_registered = len(ordered[0]) if ordered else 0
    _registered_escaped = any('"' in s or "\\" in s or not s.isprintable() for s in ordered)
    _generation += 1


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with registered secrets, `secrets` and credential shapes replaced.

    Lone surrogates (which JSON escapes can produce, and which neither RE2 nor
    protobuf can encode) become U+FFFD.
    """
    if not text:
        return text
    return _redact(utf8_safe(text), secrets)


def utf8_safe(text: str) -> str:
    """`text`, with any lone surrogate replaced by U+FFFD so that it encodes as UTF-8."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _redact(text: str, secrets: Iterable[str]) -> str:
    text = _redact_registered(text)
    if secrets:
        for secret in sorted({s for s in secrets if s and s.strip()}, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
    return redact_shapes(text)


def _redact_registered(text: str) -> str:
    for value in _registered_long:
        if value in text:
            text = text.replace(value, REDACTED)
    registered = _registered
    # The pattern is the values' alternation: it matches only where one of them occurs.
    if registered is not None and (
        registered[1] is None or any(value in text for value in registered[1])
    ):
        data = text.encode()
        replaced = substitute(registered[0], data)
        if replaced is not data:
            text = replaced.decode()
    return text


def needs_redaction(text: str) -> bool:
    """False only when neither `redact` nor a secret name's hiding could change any
    part of `text`: it encodes as UTF-8 and holds no registered secret, no word a
    credential shape needs, and no secret-name marker. Linear in `text`. The JSON
    text of a value qualifies for all its keys and strings (JSON escapes none of
    those words, and a registered secret JSON would escape answers True)."""
    try:
        data = text.encode()
    except UnicodeEncodeError:
        return True
    if _registered_escaped or any(value in text for value in _registered_long):
        return True
    registered = _registered
    if registered is not None and (
        any(value in text for value in registered[1])
        if registered[1] is not None
        else registered[0].pattern.search(data) is not None
    ):
        return True
    if _WORDS.search(folded(text).encode()) is not None:
        return True
    return not text.isascii() and _MARKERS.search(text.upper().encode()) is not None


# What is read past a cap before redacting, and never shown: a credential the
# window cuts in two may not be recognised, and is at most this long.
_CUT_MARGIN = 4096


def redact_head(text: str, limit: int) -> tuple[str, int]:
    """The redacted start of `text`, at most `limit` characters, and how many
    characters were left out (0: all of it is there).

    Only `limit` characters plus a margin are redacted, so the work per call is
    bounded by the cap. A secret cut by the end of that window may escape its
    pattern, so what follows the window's last replacement within its last
    margin characters is never shown: no part of a secret shorter than the
    margin (and than the longest registered value) is.
    """
    margin = max(_CUT_MARGIN, _longest_registered)
    if len(text) <= limit + margin:
        redacted = redact(text)
        return redacted[:limit], max(0, len(redacted) - limit)
    window = redact(text[: limit + margin])
    last = window.rfind(REDACTED, len(window) - margin)
    unsure = margin if last < 0 else len(window) - last - len(REDACTED)
    shown = window[: max(0, min(limit, len(window) - unsure))]
    return shown, len(text) - len(shown)


# Kept: the same few names (keys of objects, parameters) are asked about again and
# again, by every redaction of a structured value.
@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when a parameter, header or field name suggests its value is a secret."""
    upper = name.upper()
    return any(marker in upper for marker in _SECRET_MARKERS)


# Where an entry names a variable or parameter, and where it holds its value:
# {"name": "DB_PASSWORD", "value": "..."} in env vars and in the specs of
# custom kinds (pipeline params, operator-managed env), {"key": ..., "value": ...}
# in many Helm-rendered and operator objects.
_NAMING_KEYS = ("name", "key")
_VALUE_KEYS = frozenset({"value", "default", "defaultValue"})


def hides_value(mapping: Mapping[Any, Any], key: Any) -> bool:
    """True when `mapping[key]`, a literal, must never be shown: its key looks
    secret, or it is the value of an entry whose name or key looks secret.
    Objects and lists under such keys keep their structure (their own
    literals meet this rule in turn)."""
    value = mapping[key]
    if value is None or isinstance(value, Mapping | list | tuple):
        return False
    name = str(key)
    if is_secret_name(name):
        return True
    return name in _VALUE_KEYS and any(
        isinstance(mapping.get(k), str) and is_secret_name(mapping[k]) for k in _NAMING_KEYS
    )


# Nesting followed when redacting; deeper values are replaced wholesale, so
# hostile nesting stays cheap.
_MAX_DEPTH = 8


def redact_mapping(
    value: Any,
    *,
    max_depth: int = _MAX_DEPTH,
    keep_shape: bool = False,
    text: Callable[[str], str] | None = None,
) -> Any:
    """Redacted copy of a JSON-like value: secret-named keys lose their values,
    strings pass through `redact` (or `text`, a `redact` that keeps its answers),
    anything nested deeper than `max_depth` is replaced. With `keep_shape`
    (objects written back to an API server) only non-empty strings are hidden,
    never a `name` or `key` that names something."""
    return _copied(value, 0, max_depth, keep_shape, text or redact)


def _copied(
    value: Any, depth: int, max_depth: int, keep_shape: bool, shown: Callable[[str], str]
) -> Any:
    if isinstance(value, str):
        return shown(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= max_depth:
        return REDACTED
    options = (max_depth, keep_shape, shown)
    if isinstance(value, Mapping):
        return {
            str(k): REDACTED if _hidden(value, k, keep_shape) else _copied(v, depth + 1, *options)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [_copied(v, depth + 1, *options) for v in value]
    return shown(str(value))


def _hidden(mapping: Mapping[Any, Any], key: Any, keep_shape: bool) -> bool:
    if not keep_shape:
        return is_secret_name(str(key)) or hides_value(mapping, key)
    value = mapping[key]
    return (
        bool(value)
        and isinstance(value, str)
        and str(key) not in _NAMING_KEYS
        and (hides_value(mapping, key))
    )


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, saying how many were cut.

    The marker is part of the budget only loosely (it adds ~30 characters):
    what matters is that a megabyte never reaches a log line or a response.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more characters cut]"
