"""The seam through which an investigation's reads can be recorded.

Design notes: docs/internals.md (`domain/recording.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = ["NOT_RECORDED", "ReadRecorder"]

P = TypeVar("P")


class ReadRecorder(Protocol):
    """One investigation's recorder of what its ports answer."""

    def reading(self, port: P, allows_namespace: Callable[[str], bool] | None = None) -> P:
        """`port`, or a port that answers the same and records what it answered;
        of what it answered, only what lies in a namespace `allows_namespace` allows
        (the caller's scope: a tool that reads wide and filters after reading must
        not leave what it dropped in the record)."""
        ...


class _NotRecorded:
    __slots__ = ()

    def reading(self, port: P, allows_namespace: Callable[[str], bool] | None = None) -> P:
        return port


NOT_RECORDED: ReadRecorder = _NotRecorded()
