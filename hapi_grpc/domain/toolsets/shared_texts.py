"""One copy of each identical tool output across the investigations in flight.

Design notes: docs/internals.md (`domain/toolsets/shared_texts.py`).
"""

from __future__ import annotations

__all__ = ["SharedTexts"]


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
