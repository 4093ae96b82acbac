"""How a finished analysis is kept: its messages length-prefixed and compressed."""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable
from typing import TypeVar

from google.protobuf import proto
from google.protobuf.message import Message

__all__ = ["pack", "unpack"]

M = TypeVar("M", bound=Message)


def pack(result: Message, events: Iterable[Message]) -> bytes:
    """The result, then the events, as length-prefixed messages (the protobuf
    convention for a sequence), compressed.

    The result comes first so that a caller that replays nothing decodes only
    it. A result is kept for `HAPI_RESULT_TTL_SECONDS`, a thousand of them
    after an alert storm: tool results are JSON text, which zlib's fastest
    level shrinks to about a third for tens of microseconds.
    """
    out = io.BytesIO()
    proto.serialize_length_prefixed(result, out)
    for event in events:
        proto.serialize_length_prefixed(event, out)
    return zlib.compress(out.getvalue(), 1)


def unpack(message: type[M], payload: bytes, *, with_events: bool) -> tuple[M, list[M]]:
    """The result of a `pack`ed payload and, when asked, its events in order."""
    data = zlib.decompress(payload)
    stream = io.BytesIO(data)
    result = proto.parse_length_prefixed(message, stream)
    events = []
    while with_events and stream.tell() < len(data):
        events.append(proto.parse_length_prefixed(message, stream))
    return result, events
