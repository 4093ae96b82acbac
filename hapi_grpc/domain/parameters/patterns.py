"""Schema patterns compiled with RE2 (time linear in the input), cached.

A pattern that is too long or does not compile is not an error here: the
caller gets the reason (`PatternProblem`) and reports it against the value.
"""

from __future__ import annotations

import enum
import functools
import logging

import re2

from hapi_grpc.domain.parameters.limits import MAX_PATTERN_LENGTH
from hapi_grpc.domain.sensitive import clip

__all__ = ["Pattern", "PatternProblem", "compile_pattern"]

logger = logging.getLogger("hapi_grpc.domain.parameters")

_PATTERN_CACHE_SIZE = 256
_RE2_MAX_MEM = 1 << 20
_LOG_PATTERN_CHARS = 80


class PatternProblem(enum.Enum):
    """Why a schema pattern cannot be used."""

    TOO_LONG = "too_long"
    INVALID = "invalid"


class Pattern:
    """A compiled schema pattern with a fast membership test.

    RE2::Set answers "does it match anywhere" without computing match spans,
    which makes it several times faster than `re2.compile(...).search` through
    the Python wrapper. A negative answer is confirmed with the full RE2 API
    because RE2::Set has no fallback when its DFA runs out of memory.
    """

    __slots__ = ("_regex", "_set", "source")

    def __init__(self, source: str, options: re2.Options) -> None:
        self.source = source
        self._regex = re2.compile(source, options)
        self._set = re2.Set.SearchSet(options)
        self._set.Add(source)
        self._set.Compile()

    def search(self, text: str) -> bool:
        """True when `text` contains a match. Raises UnicodeEncodeError on lone surrogates."""
        if self._set.Match(text) is not None:
            return True
        return self._regex.search(text) is not None


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a bad catalog pattern is reported, not printed to stderr
    options.never_capture = True
    # Bounds each compiled object (program plus lazily built DFA); a pattern too
    # big for it fails to compile and is reported as unusable.
    options.max_mem = _RE2_MAX_MEM
    return options


@functools.lru_cache(maxsize=_PATTERN_CACHE_SIZE)
def compile_pattern(source: str) -> Pattern | PatternProblem:
    """The compiled pattern, or why it cannot be used."""
    if len(source) > MAX_PATTERN_LENGTH:
        return PatternProblem.TOO_LONG
    try:
        return Pattern(source, _re2_options())
    except Exception as exc:  # any failure means "unusable pattern", never a crash
        logger.warning(
            "Workflow schema pattern %r does not compile: %s",
            clip(source, _LOG_PATTERN_CHARS),
            exc,
        )
        return PatternProblem.INVALID
