"""Requests whose bytes are not a valid message.

Design notes: docs/internals.md (`transport/undecodable.py`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from hapi_grpc.domain.sensitive import clip

log = logging.getLogger(__name__)

LOG_INTERVAL_SECONDS = 10.0


class Undecodable:
    """Stands in for a request that could not be decoded."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def tolerant_deserializer(
    deserializer: Callable[[bytes], Any] | None,
) -> Callable[[bytes], Any] | None:
    """`deserializer`, answering `Undecodable` where it would raise."""
    if deserializer is None:
        return None
    decode = deserializer

    def deserialize(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception as exc:  # DecodeError, RecursionError, ... : all the caller's bytes
            return Undecodable(f"{type(exc).__name__}: {clip(str(exc), 200)}")

    return deserialize


def invalid_message(message_name: str) -> str:
    """The fixed text the caller receives."""
    return f"request is not a valid {message_name} message"


class WarningThrottle:
    """At most one log line per `interval` seconds, counting the ones it held back."""

    __slots__ = ("_interval", "_next", "_suppressed")

    def __init__(self, interval: float = LOG_INTERVAL_SECONDS) -> None:
        self._interval = interval
        self._next = 0.0
        self._suppressed = 0

    def warn(self, method: str, reason: str) -> None:
        now = time.monotonic()
        if now < self._next:
            self._suppressed += 1
            return
        self._next = now + self._interval
        suppressed, self._suppressed = self._suppressed, 0
        log.warning(
            "undecodable request refused with INVALID_ARGUMENT",
            extra={"method": method, "reason": reason, "suppressed_since_last": suppressed},
        )
