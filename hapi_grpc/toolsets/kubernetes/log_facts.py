"""How the `kubernetes` tools fill the observed record with the events and logs they
read: one folded event (`record_event`), the facts of one container log read
(`record_log`: its size, the lines blaming the configuration, the start-up time it
states). Every string passes through `sensitive.redact`; patterns are RE2 (linear in
the line's length).
"""

from __future__ import annotations

from typing import Any

import re2

from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.observed.facts import EventFacts, LogFacts
from hapi_grpc.domain.sensitive import redact
from hapi_grpc.toolsets.kubernetes.kinds import epoch
from hapi_grpc.toolsets.kubernetes.summaries import NOTE_LENGTH_LIMIT

__all__ = ["record_event", "record_log"]

_LINE = 300
# A log line that blames the configuration (a missing key, an invalid setting):
# the premise of a configuration fix. RE2: linear in the line's length.
_CONFIG_ERROR = re2.compile(
    r"(?i)\b(config(uration)?|settings?|env(ironment)? var(iable)?)\b.{0,80}"
    r"\b(missing|invalid|unknown|required|not set|malformed|cannot parse|parse error|bad)\b"
    r"|\b(missing|invalid|unknown|required|malformed)\b.{0,40}"
    r"\b(config(uration)?|settings?|env(ironment)? var(iable)?)\b"
)
# A line stating how long start-up takes, in the forms application frameworks log it
# ("Started App in 91.2 seconds", "started in 2.3s", "ready in 850 ms", "startup took
# 95s", "warming cache (est. 40s)"): the time a liveness probe must leave a starting
# container. RE2: linear.
_STARTUP = re2.compile(
    r"(?i)\b(?:start(?:ed|ing|up)?|start-up|boot(?:ed|ing)?|ready|initiali[sz](?:ed|ing|ation)"
    r"|warm(?:ed|ing)?(?:[- ]?up)?)\b[^0-9\n]{0,60}?"
    r"(?:\b(?:in|took|after|est\.?|estimated|expected|approx\.?|about)\s*|~\s*)"
    r"([0-9]{1,6}(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b"
)


def record_event(
    observed: Observed, kind: str, namespace: str, name: str, event: dict[str, Any]
) -> None:
    """One folded event about `kind/name`."""
    count = event.get("count")
    observed.add_event(
        EventFacts(
            kind=kind,
            namespace=namespace,
            name=name,
            type=str(event.get("type", "")),
            reason=str(event.get("reason", "")),
            # Whole, up to the API's own limit: the end of a kubelet's failure says why.
            message=redact(str(event.get("message", "")))[:NOTE_LENGTH_LIMIT],
            count=count if isinstance(count, int) else 1,
            first_at=epoch(event.get("first_seen")),
            last_at=epoch(event.get("last_seen")),
        )
    )


def record_log(
    observed: Observed,
    namespace: str,
    pod: str,
    container: str,
    *,
    previous: bool,
    lines: list[str],
) -> None:
    """Facts of a container log read: its size and the lines blaming configuration."""
    blamed = [redact(line)[:_LINE] for line in lines if _CONFIG_ERROR.search(line)][:5]
    observed.add_log(
        LogFacts(
            namespace=namespace,
            pod=pod,
            container=container,
            previous=previous,
            lines_read=len(lines),
            config_errors=blamed,
            last_line=redact(lines[-1])[:_LINE] if lines else "",
            startup_seconds=_startup_seconds(lines),
        )
    )


def _startup_seconds(lines: list[str]) -> float:
    """The longest start-up time the lines state, in seconds; 0.0 when none does."""
    longest = 0.0
    for line in lines:
        found = _STARTUP.search(line[:2000])
        if found:
            unit = found.group(2).lower()
            if unit == "ms" or unit.startswith("milli"):
                factor = 0.001
            else:
                factor = 60.0 if unit.startswith("m") else 1.0
            longest = max(longest, float(found.group(1)) * factor)
    return longest
