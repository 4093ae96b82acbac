"""The incident fingerprint: what makes two requests the same incident.

`incident_fingerprint` hashes an incident's canonical JSON without the
remediation id and the deduplication counters a controller moves between
retries, so a retry finds the investigation (or stored result) of its first try.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, datetime
from functools import cache
from typing import Any

from hapi_grpc.domain.incident import Incident

__all__ = ["FINGERPRINT_VERSION", "incident_fingerprint"]

# Bump when the fingerprint's content changes, so old stored results stop matching.
FINGERPRINT_VERSION = 2

# Deduplication fields a controller updates between retries of one incident.
_MOVING_DEDUPLICATION_FIELDS = ("last_seen", "occurrence_count")


def incident_fingerprint(incident: Incident) -> str:
    """SHA-256 (hex) of the incident's canonical JSON, without the remediation id.

    Nearly every field is in it: each reaches the prompt, the catalog search
    filters or the result (`incident_id` is echoed), so each can change the
    decision. Left out are the deduplication counters that move while the
    same incident goes on (`last_seen`, `occurrence_count`): a controller
    that rebuilds its request on a retry updates them, and that retry must
    still find its investigation. Map keys are sorted, timestamps in UTC.
    """
    return _digest(_plain(incident))


def _digest(content: dict[str, Any]) -> str:
    """The fingerprint of an incident's plain content (as `dataclasses.asdict` gives it)."""
    content.pop("remediation_id")
    if content.get("recovery", 0) is None:
        # A first analysis fingerprints as it did before recovery existed.
        del content["recovery"]
    for moving in _MOVING_DEDUPLICATION_FIELDS:
        content["deduplication"].pop(moving, None)
    canonical = json.dumps(
        {"v": FINGERPRINT_VERSION, "incident": content},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=_json_value,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _plain(value: Any) -> Any:
    """What `dataclasses.asdict` gives, as far as JSON can tell, without its deep copies
    of every leaf (a fifth of the fingerprint's cost). Keep it JSON-equal to asdict:
    stored fingerprints must not change."""
    fields = _field_names(value.__class__)
    if fields is not None:
        # Most fields are strings, numbers or None: taken as they are, without a call.
        return {
            name: v if type(v) in _ATOMS else _plain(v)
            for name in fields
            for v in (getattr(value, name),)
        }
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


_ATOMS = frozenset({str, int, float, bool, type(None)})


@cache  # bounded: the incident's own classes and the builtin types of its values
def _field_names(cls: type) -> tuple[str, ...] | None:
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(f.name for f in dataclasses.fields(cls))


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).isoformat()
    return str(value)
