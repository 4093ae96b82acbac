"""One copy of each identical tool output across the investigations in flight.

`SharedTexts.share` returns an equal text already known; `RedactedOutputs` redacts
each such text once. Design notes: docs/internals.md (`domain/toolsets/shared_texts.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hapi_grpc.domain.sensitive import redaction_generation

__all__ = ["RedactedOutputs", "SharedTexts"]


class _Kept:
    """Texts remembered by key, oldest first out past `max_chars` characters of text."""

    __slots__ = ("_chars", "_max_chars", "_min_chars", "_texts")

    def __init__(self, *, max_chars: int = 1 << 20, min_chars: int = 512) -> None:
        self._max_chars = max_chars
        self._min_chars = min_chars
        self._texts: dict[Any, str] = {}
        self._chars = 0

    def _keep(self, key: Any, text: str, value: str) -> str:
        """Remember `value` under `key` (made from `text`); forget the oldest past the cap."""
        self._texts[key] = value
        self._chars += len(text)
        while self._chars > self._max_chars:
            oldest = next(iter(self._texts))
            del self._texts[oldest]
            self._chars -= len(oldest if isinstance(oldest, str) else oldest[0])
        return value

    @property
    def chars(self) -> int:
        """Characters remembered now."""
        return self._chars


class SharedTexts(_Kept):
    """Equal texts, shared; at most `max_chars` characters remembered, short texts not at all."""

    __slots__ = ()

    def share(self, text: str) -> str:
        """`text`, or the equal text remembered earlier."""
        if len(text) < self._min_chars:
            return text  # sharing would save less than the lookup holds
        known = self._texts.get(text)
        return self._keep(text, text, text) if known is None else known


class RedactedOutputs(_Kept):
    """The redacted, capped form of tool outputs seen before.

    Redacting a tool's output (`sensitive.redact_head`) depends only on the text,
    the cap and the registered secrets, so an output equal to one seen since the
    secrets last changed (a storm's catalog answers) is not redacted again. Holds
    at most `max_chars` characters of outputs, oldest first out; short outputs,
    cheap to redact, are not held.
    """

    __slots__ = ()

    def get(self, text: str, limit: int, redact: Callable[[str, int], str]) -> str:
        """`redact(text, limit)`, or what it gave for an equal text under the same
        registered secrets."""
        if len(text) < self._min_chars:
            return redact(text, limit)
        key = (text, limit, redaction_generation())
        known = self._texts.get(key)
        return self._keep(key, text, redact(text, limit)) if known is None else known
