"""The spec hash both history sources compare: `sha256:<hex>` of canonical JSON."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["spec_hash"]


def spec_hash(spec: Mapping[str, Any]) -> str:
    """SHA-256 of `spec` as canonical JSON (keys sorted at every level, no
    insignificant whitespace, UTF-8 without escaping), as `sha256:<64 hex>`."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
