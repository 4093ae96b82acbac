"""What the `kubernetes` tools share in one investigation.

`KubernetesSession` runs the scope checks before any request, holds the
per-investigation output budget, and wraps every answer under `cluster_data` so
the conversation marks it as data read from the cluster, never instructions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.adapters.kubernetes.reader import (
    ApiServerReader,
    KubeFailure,
    KubeFailureKind,
    ResourceType,
)
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.toolsets.jsontext import compact_json
from hapi_grpc.domain.toolsets.tool import FailureAnswers, ToolContext, ToolResult, refused
from hapi_grpc.toolsets.kubernetes import INVESTIGATION_OUTPUT_CHARS, KubernetesToolset
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope, ScopeRefusal

__all__ = ["DATA_KEY", "KubernetesSession", "guarded"]

DATA_KEY = KubernetesToolset.data_key


@dataclass
class KubernetesSession:
    """One investigation's access to the cluster: scope, reader, output budget."""

    reader: ApiServerReader
    scope: KubernetesScope
    per_call_chars: int = 12_000
    investigation_chars: int = INVESTIGATION_OUTPUT_CHARS
    shown_chars: int = field(default=0, init=False)

    async def resolve(self, kind: str, namespace: str | None, ctx: ToolContext) -> ResourceType:
        """Scope checks (before any request), then discovery, then the checks again."""
        self.scope.check_kind(kind)
        if namespace is not None:
            self.scope.namespaces.check(namespace)
        rtype = await self.reader.resolve(kind, ctx.timeout)
        self.scope.check_kind(rtype.kind)
        if rtype.namespaced and namespace is None:
            raise ScopeRefusal(f"{rtype.kind} is namespaced: give its namespace.")
        return rtype

    def answer(self, data: dict[str, Any], list_key: str | None = None) -> ToolResult:
        """`data` wrapped as cluster data, cut to the per-call and investigation caps."""
        left = self.investigation_chars - self.shown_chars
        if left < 200:
            return ToolResult(
                ToolCallStatus.LIMIT_EXCEEDED,
                {
                    "error": f"this investigation has read its {self.investigation_chars}"
                    " characters of cluster data; answer from what you have."
                },
            )
        limit = min(self.per_call_chars, left)
        payload: dict[str, Any] = {DATA_KEY: data}
        text = compact_json(payload)
        items = data.get(list_key) if list_key else None
        if len(text) > limit and isinstance(items, list) and items:
            # The most leading items that fit, found by bisection: the text only
            # grows with each item kept, and re-serializing after every dropped
            # item cost seconds for a 500-line log.
            full = list(items)

            def keep(count: int) -> str:
                items[:] = full[:count]
                payload["truncated"] = (
                    f"showing {count} of {len(full)} {list_key}: output cap reached"
                )
                return compact_json(payload)

            low, high = 0, len(full) - 1  # keeping `high + 1` items is known not to fit
            while low < high:
                middle = (low + high + 1) // 2
                if len(keep(middle)) <= limit:
                    low = middle
                else:
                    high = middle - 1
            text = keep(low)
        if len(text) > limit:
            payload = {DATA_KEY: {"kind": data.get("kind"), "name": data.get("name")}}
            payload["truncated"] = f"the view ({len(text)} characters) exceeds the output cap"
            text = compact_json(payload)
        self.shown_chars += len(text)
        return ToolResult(ToolCallStatus.SUCCESS, payload)


def _failure(exc: KubeFailure | ScopeRefusal) -> ToolResult:
    if isinstance(exc, ScopeRefusal):
        return refused(exc.message)
    if exc.kind in (KubeFailureKind.UNKNOWN_KIND, KubeFailureKind.INVALID):
        return refused(exc.message)
    if exc.kind is KubeFailureKind.TIMEOUT:
        return ToolResult(ToolCallStatus.TIMEOUT, {"error": exc.message + "; go on without it."})
    return ToolResult(ToolCallStatus.ERROR, {"error": exc.message})


# Decorates a `kubernetes` tool's `run`: scope refusals and read failures as answers.
guarded = FailureAnswers((KubeFailure, ScopeRefusal), _failure)
