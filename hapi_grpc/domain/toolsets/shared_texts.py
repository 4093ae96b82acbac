"""One copy of each identical tool output across the investigations in flight.

`SharedTexts.share` returns an equal text already known; `RedactedOutputs` redacts
each such text once. Design notes: docs/internals.md (`domain/toolsets/shared_texts.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from hapi_grpc.domain.sensitive import redaction_generation

__all__ = ["RedactedOutputs", "SharedTexts"]


class SharedTexts:
    """Equal texts, shared; at most `max_chars` characters remembered, short texts not at all."""

    __slots__ = ("_chars", "_max_chars", "_min_chars", "_texts")

    def __init__(self, *, max_chars: int = 1 << 20, min_chars: int = 512) -> None:
        self._max_chars = max_chars
        self._min_chars = min_chars
        self._texts: dict[str, str] = {}
        self._chars = 0

    def share(self, text: str) -> str:
        """`text`, or the equal text remembered earlier."""
        if len(text) < self._min_chars:
            return text  # sharing would save less than the lookup holds
        known = self._texts.get(text)
        if known is not None:
            return known
        self._texts[text] = text
        self._chars += len(text)
        while self._chars > self._max_chars:
            oldest = next(iter(self._texts))
            del self._texts[oldest]
            self._chars -= len(oldest)
        return text

    @property
    def chars(self) -> int:
        """Characters remembered now."""
        return self._chars


class RedactedOutputs:
    """The redacted, capped form of tool outputs seen before.

    Redacting a tool's output (`sensitive.redact_head`) depends only on the text,
    the cap and the registered secrets, so an output equal to one seen since the
    secrets last changed (a storm's catalog answers) is not redacted again. Holds
    at most `max_chars` characters of outputs, oldest first out; short outputs,
    cheap to redact, are not held.
    """

    __slots__ = ("_chars", "_max_chars", "_min_chars", "_texts")

    def __init__(self, *, max_chars: int = 1 << 20, min_chars: int = 512) -> None:
        self._max_chars = max_chars
        self._min_chars = min_chars
        self._texts: dict[tuple[str, int, int], str] = {}
        self._chars = 0

    def get(self, text: str, limit: int, redact: Callable[[str, int], str]) -> str:
        """`redact(text, limit)`, or what it gave for an equal text under the same
        registered secrets."""
        if len(text) < self._min_chars:
            return redact(text, limit)
        key = (text, limit, redaction_generation())
        known = self._texts.get(key)
        if known is not None:
            return known
        shown = redact(text, limit)
        self._texts[key] = shown
        self._chars += len(text)
        while self._chars > self._max_chars:
            oldest = next(iter(self._texts))
            del self._texts[oldest]
            self._chars -= len(oldest[0])
        return shown
