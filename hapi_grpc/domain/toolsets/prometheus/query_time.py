"""Prometheus durations and times, as the metrics tools and the metrics client read them.

`duration_seconds` and `number_seconds` are the two readings both sides
share; `parse_duration` and `parse_time` are the rules of the tool arguments
(a positive duration without years; `now`, `now-<duration>`, unix seconds or
an RFC 3339 time). The client adds its own rules on the same readings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime

import re2

__all__ = [
    "DURATION_HELP",
    "TIME_HELP",
    "UNIT_SECONDS",
    "duration_seconds",
    "number_seconds",
    "parse_duration",
    "parse_time",
]

DURATION_HELP = "a duration such as 30s, 15m, 1h or 2d"
TIME_HELP = "now, now-30m, unix seconds or an RFC 3339 time (2026-01-01T10:00:00Z)"
UNIT_SECONDS: Mapping[str, float] = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 604800,
    "y": 31536000,
}
_ARGUMENT_UNITS = {unit: size for unit, size in UNIT_SECONDS.items() if unit != "y"}
# RE2: backtracking took 0.6 s over 4,096 digits (each start re-read the run).
_MAX_DURATION_CHARS = 64  # "1h1h1h..." would sum a match per two characters
_DURATION = re2.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")


def duration_seconds(text: str, units: Mapping[str, float] = UNIT_SECONDS) -> float | None:
    """Seconds of a duration such as `90s` or `1h30m` in `units`; None when it is not one."""
    if len(text) > _MAX_DURATION_CHARS or not text.isascii():
        return None  # digits and units are ASCII; RE2 reads nothing else here
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos or match.group(2) not in units:
            break
        total += float(match.group(1)) * units[match.group(2)]
        pos = match.end()
    return total if text and pos == len(text) else None


def number_seconds(text: str, error: str) -> float | None:
    """`text` as a plain number of seconds, None when it is no number; ValueError(`error`)
    when it is not finite or negative."""
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        raise ValueError(error)
    return value


def parse_duration(text: str) -> float:
    """Seconds of a Prometheus duration (`90s`, `1h30m`); ValueError otherwise."""
    total = duration_seconds(text.strip(), _ARGUMENT_UNITS)
    if not total:
        raise ValueError(f"must be {DURATION_HELP}")
    return total


def parse_time(text: str, now: float) -> float:
    """Unix seconds of `now`, `now-<duration>`, unix seconds or an RFC 3339 time."""
    text = text.strip()
    if text == "now":
        return now
    if text.startswith("now-"):
        return now - parse_duration(text[4:])
    value = number_seconds(text, f"must be {TIME_HELP}")
    if value is not None:
        return value
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"must be {TIME_HELP}") from None
    if parsed.tzinfo is None:
        raise ValueError("an RFC 3339 time needs a zone (Z or +00:00)")
    return parsed.timestamp()
