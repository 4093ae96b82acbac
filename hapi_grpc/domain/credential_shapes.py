"""Shapes of credentials, hidden from text even when nobody registered them.

Design notes: docs/internals.md (`domain/credential_shapes.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import re2

__all__ = [
    "MARK",
    "REDACTED",
    "SHAPES",
    "SHAPE_WORDS",
    "Shape",
    "folded",
    "redact_shapes",
    "substitute",
]

REDACTED = "[REDACTED]"
"""Stands in for every hidden value, wherever it was hidden."""
MARK = REDACTED.encode()

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
# must go. Narrower than `sensitive.is_secret_name` on purpose: free text says
# "key" and "session" in harmless ways far more often than parameter names do.
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
class Shape:
    """A credential shape over UTF-8 bytes: each match becomes group `keep`
    (0: nothing) followed by `then`, when `when` (if any) accepts it.

    `words`: one of them is in the lower-cased text wherever the shape matches
    (each implied by a match: "connection" by CONNECTION_STRING, "key" by API_KEY,
    ...). `in` is tens of times faster than a case-insensitive pattern, and a
    shape whose words are absent is not tried (the assignment shape alone costs
    more than all the others), so no match is skipped."""

    pattern: re2._Regexp
    then: bytes = MARK
    keep: int = 0
    when: Callable[[re2._Match], bool] | None = None
    words: tuple[str, ...] = ()


def _rx(source: str) -> re2._Regexp:
    return re2.compile(source.encode())


# Shapes of credentials hidden even if nobody registered them. Each keeps a
# harmless prefix so a reader still sees what kind of thing was there.
SHAPES: tuple[Shape, ...] = (
    Shape(
        _rx(r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)"),
        words=("-----begin",),
    ),
    Shape(
        _rx(rf"(?i)\b(bearer)[{_WS}]+[A-Za-z0-9._~+/=\-{_I}]{{8,}}"),
        b" " + MARK,
        keep=1,
        words=("bearer",),
    ),
    Shape(
        _rx(rf"\b(Basic)([{_WS}]+)([A-Za-z0-9+/]{{12,}})(={{0,2}})"),
        b" " + MARK,
        keep=1,
        when=_is_base64_credential,
        words=("basic",),
    ),
    Shape(
        _rx(rf"""(?i)(\b{_ASSIGNED_NAME}["']?[{_WS}]*[:=][{_WS}]*["']?)[^{_WS}"'&,;{{}}\[\]]+"""),
        keep=1,
        words=tuple("password passwd passphrase secret token key credential connection".split()),
    ),
    # Credentials in URLs such as redis://:password@host or https://user:pw@host.
    Shape(
        _rx(rf"(?i)\b([a-z{_I}][a-z0-9+.\-{_I}]*://)[^/{_WS}:@]*:[^/{_WS}@]+@"),
        MARK + b"@",
        keep=1,
        words=("://",),
    ),
    # `sk-` not glued to a word before it (a lookbehind under `re`).
    Shape(_rx(r"(^|[^A-Za-z0-9_-])sk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}"), keep=1, words=("sk-",)),
    Shape(_rx(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), words=("akia", "asia")),
    Shape(_rx(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"), words=tuple(f"gh{c}_" for c in "pousr")),
    Shape(_rx(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), words=tuple(f"xox{c}-" for c in "abposr")),
    Shape(
        _rx(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        words=("eyj",),
    ),
)


def substitute(shape: Shape, data: bytes) -> bytes:
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


# Each word with the index of its shape, in the order the shapes are tried.
_WORD_SHAPES = tuple((word, index) for index, shape in enumerate(SHAPES) for word in shape.words)
# Past this length one automaton pass for all the words at once is cheaper
# than a substring test per word (a tool result of kilobytes: 9 µs, not 50).
_LONG_TEXT = 256
_ANY_WORD = re2.compile("|".join(re2.escape(word) for word, _ in _WORD_SHAPES))
SHAPE_WORDS = tuple(word for word, _ in _WORD_SHAPES)
"""Every shape needs one of these in the `folded` text to match."""


def folded(text: str) -> str:
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


def redact_shapes(text: str) -> str:
    """`text` with the shapes whose words it holds applied, over its UTF-8 bytes."""
    lowered = folded(text)
    if len(lowered) > _LONG_TEXT and _ANY_WORD.search(lowered) is None:
        return text
    data = original = text.encode()
    tried = 0  # bit i: shape i was applied
    for word, index in _WORD_SHAPES:
        if not tried >> index & 1 and word in lowered:
            tried |= 1 << index
            data = substitute(SHAPES[index], data)
    return text if data is original else data.decode()
