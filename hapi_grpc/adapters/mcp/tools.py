"""MCP tools as offered to the model, and what one call answers.

`McpTool` is a server's tool under its exposed name, `McpCallResult` the
(clipped, redacted) text of one call, `CallCounter` the calls per server in
one investigation; `content_text` joins a result's content blocks as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.domain.bounded_json import check_depth


@dataclass(frozen=True)
class McpTool:
    """A tool as offered to the model."""

    name: str  # <server>__<tool>
    server: str
    tool: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class McpCallResult:
    server: str
    tool: str
    text: str
    is_error: bool
    truncated: bool


@dataclass
class CallCounter:
    """Calls made per server in one investigation (create one per investigation)."""

    counts: dict[str, int] = field(default_factory=dict)


def content_text(result: Any) -> str:
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'unknown'} content omitted]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        try:
            check_depth(structured)
        except ValueError as exc:
            return f"[structured content omitted: {exc}]"
        parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":"), default=str))
    return "\n".join(parts)
