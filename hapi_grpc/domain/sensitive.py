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
- `redact_head(text, limit)`: the redacted start of a long text, reading only
  about `limit` characters of it.
- `clip(text, limit)`: caller- or model-controlled text cut to `limit`
  characters with a marker saying how much was cut.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import re2

__all__ = [
    "REDACTED",
    "clip",
    "is_secret_name",
    "redact",
    "redact_head",
    "redact_mapping",
    "register_secret",
    "registered_count",
    "replace_secrets",
]

REDACTED = "[REDACTED]"
"""Stands in for every hidden value, wherever it was hidden."""
_MARK = REDACTED.encode()

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

# Every pattern here meets text written by others (logs, events, model replies,
# MCP results), so all are RE2: time linear in the text whatever it holds. The
# backtracking `re` took 13 s for `"token-" * 300`. Where RE2's classes differ
# from `re`'s they are spelled out so that nothing `re` hid is shown now:
# whitespace is Unicode whitespace as `str.isspace()` has it, and under (?i)
# the dotted and dotless i (U+0130, U+0131) count as `i`, as `re` takes them.
# RE2's `\b` knows only ASCII word characters, so it finds a boundary in a few
# more places than `re` did (after "é"): it hides more, never less.
_WS = r"\t-\r\x1c-\x20\x{85}\p{Z}"
_I = r"\x{130}\x{131}"


def _dotted(word: str) -> str:
    """`word` with each I also matching U+0130 and U+0131 under (?i)."""
    return word.replace("I", f"[I{_I}]")


# The name part of a `NAME=value` / `"name": "value"` assignment whose value
# must go. Narrower than `_SECRET_MARKERS` on purpose: free text says "key"
# and "session" in harmless ways far more often than parameter names do.
_NAME_CHAR = rf"[A-Za-z0-9_.\-{_I}]"
_ASSIGNED_NAME = (
    rf"{_NAME_CHAR}*"
    + _dotted(
        r"(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API[_\-]?KEY|ACCESS[_\-]?KEY|PRIVATE[_\-]?KEY"
        r"|CREDENTIALS?|AUTH[_\-]?KEY|CLIENT[_\-]?SECRET|CONNECTION[_\-]?STRING)"
    )
    + rf"{_NAME_CHAR}*"
)


_BASE64_MARKS = frozenset(b"0123456789+/")


def _is_base64_credential(match: re2._Match) -> bool:
    # Basic credentials are base64: demand a digit, base64 punctuation or
    # padding so that prose such as "Basic troubleshooting" stays readable
    # (what a lookahead did under `re`; no match can start inside this one).
    return bool(match.group(4)) or not _BASE64_MARKS.isdisjoint(match.group(3))


@dataclass(frozen=True)
class _Shape:
    """A credential shape over UTF-8 bytes: each match becomes group `keep`
    (0: nothing) followed by `then`, when `when` (if any) accepts it."""

    pattern: re2._Regexp
    then: bytes = _MARK
    keep: int = 0
    when: Callable[[re2._Match], bool] | None = None


def _rx(source: str) -> re2._Regexp:
    return re2.compile(source.encode())


# Shapes of credentials hidden even if nobody registered them. Each keeps a
# harmless prefix so a reader still sees what kind of thing was there.
_SHAPES: tuple[_Shape, ...] = (
    _Shape(
        _rx(r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)")
    ),
    _Shape(_rx(rf"(?i)\b(bearer)[{_WS}]+[A-Za-z0-9._~+/=\-{_I}]{{8,}}"), b" " + _MARK, keep=1),
    _Shape(
        _rx(rf"\b(Basic)([{_WS}]+)([A-Za-z0-9+/]{{12,}})(={{0,2}})"),
        b" " + _MARK,
        keep=1,
        when=_is_base64_credential,
    ),
    _Shape(
        _rx(rf"""(?i)(\b{_ASSIGNED_NAME}["']?[{_WS}]*[:=][{_WS}]*["']?)[^{_WS}"'&,;{{}}\[\]]+"""),
        keep=1,
    ),
    # Credentials in URLs such as redis://:password@host or https://user:pw@host.
    _Shape(
        _rx(rf"(?i)\b([a-z{_I}][a-z0-9+.\-{_I}]*://)[^/{_WS}:@]*:[^/{_WS}@]+@"),
        _MARK + b"@",
        keep=1,
    ),
    # `sk-` not glued to a word before it (a lookbehind under `re`).
    _Shape(_rx(r"(^|[^A-Za-z0-9_-])sk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"), keep=1),
    _Shape(_rx(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    _Shape(_rx(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b")),
    _Shape(_rx(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    _Shape(_rx(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
)


def _substitute(shape: _Shape, data: bytes) -> bytes:
    """`data` with every match of `shape` replaced; `data` itself when none.

    One pass, no replacement templates: each match costs a few microseconds,
    however many there are. The kept group always starts where the match does.
    """
    pieces: list[bytes] = []
    end = 0
    keep, then, when = shape.keep, shape.then, shape.when
    for match in shape.pattern.finditer(data):
        if when is not None and not when(match):
            continue
        start, stop = match.span()
        pieces.append(data[end : match.end(keep) if keep else start])
        pieces.append(then)
        end = stop
    if not pieces:
        return data
    pieces.append(data[end:])
    return b"".join(pieces)


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
_ANY_WORD = re2.compile("|".join(re2.escape(word) for word, _ in _WORD_SHAPES))


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
    """`text` with the shapes whose words it holds applied, over its UTF-8 bytes."""
    lowered = _folded(text)
    if len(lowered) > _LONG_TEXT and _ANY_WORD.search(lowered) is None:
        return text
    data = original = text.encode()
    tried = 0  # bit i: shape i was applied
    for word, index in _WORD_SHAPES:
        if not tried >> index & 1 and word in lowered:
            tried |= 1 << index
            data = _substitute(_SHAPES[index], data)
    return text if data is original else data.decode()


# The registry of known secret values. Bounded: a value registered for an
# `owner` (one token file, one set of cluster credentials) replaces that
# owner's previous values, so a rotated or revoked token is forgotten at once;
# values without an owner are kept for the most recent `_MAX_REGISTERED`.
_MAX_REGISTERED = 256
_registry_lock = threading.Lock()
_owned: dict[str, frozenset[str]] = {}
_anonymous: dict[str, None] = {}  # insertion order = least recently registered first
_registered: _Shape | None = None  # all registered values in one pattern
_longest_registered = 0


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
    value = _utf8_safe(value.strip())
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
    kept = frozenset(v for v in (_utf8_safe(s.strip()) for s in values) if v)
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


def registered_count() -> int:
    """How many distinct secret values are registered now."""
    with _registry_lock:
        return len(_all_registered())


def _all_registered() -> set[str]:
    every = set(_anonymous)
    for values in _owned.values():
        every |= values
    return every


def _recompile() -> None:
    """Rebuild the one pattern of registered values; the caller holds the lock."""
    global _registered, _longest_registered
    # Longest first, so a secret that contains another is removed whole.
    ordered = sorted(_all_registered(), key=len, reverse=True)
    options = re2.Options()
    options.max_mem = 64 << 20  # room for a few hundred tokens of a kilobyte
    source = b"|".join(re2.escape(s.encode()) for s in ordered)
    _registered = _Shape(re2.compile(source, options)) if ordered else None
    _longest_registered = len(ordered[0]) if ordered else 0


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with registered secrets, `secrets` and credential shapes replaced.

    Lone surrogates (which JSON escapes can produce, and which RE2, taking
    UTF-8, cannot read) become U+FFFD first.
    """
    if not text:
        return text
    try:
        return _redact(text, secrets)
    except UnicodeEncodeError:
        return _redact(_utf8_safe(text), secrets)


def _utf8_safe(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _redact(text: str, secrets: Iterable[str]) -> str:
    registered = _registered
    if registered is not None:
        data = text.encode()
        replaced = _substitute(registered, data)
        if replaced is not data:
            text = replaced.decode()
    if secrets:
        for secret in sorted({s for s in secrets if s and s.strip()}, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
    return _redact_shapes(text)


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
