"""The port the `kubernetes` toolset reads a cluster through, and its failures.

The domain never sees HTTP: an adapter (`hapi_grpc.adapters.kubernetes`)
implements `KubernetesReader` with GET requests only. Kinds are resolved
through the cluster's discovery, so any kind it serves (custom resources
included) has a `ResourceType`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["KubeFailure", "KubeFailureKind", "KubernetesReader", "ResourceType"]


@dataclass(frozen=True)
class ResourceType:
    """One kind as the cluster serves it."""

    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_label(self) -> str:
        """The group as ADR-038 spells it: `core` for the core group."""
        return self.group or "core"


class KubeFailureKind(enum.Enum):
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    INVALID = "invalid"  # the server rejected the request (bad selector, no such container)
    UNKNOWN_KIND = "unknown_kind"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    TOO_LARGE = "too_large"
    EXPIRED = "expired"  # 410 Gone: a resourceVersion or continue token too old to serve


class KubeFailure(Exception):
    """A read that gave no usable answer; `message` is safe to show the model."""

    def __init__(self, kind: KubeFailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class KubernetesReader(Protocol):
    """Read-only access to one cluster. Every method takes its own timeout."""

    async def resolve(self, kind: str, timeout: float) -> ResourceType:
        """The resource type for a kind, plural, short name or `group/version/Kind`."""
        ...

    async def get(
        self, rtype: ResourceType, namespace: str | None, name: str, timeout: float
    ) -> dict[str, Any]:
        """One object as JSON."""
        ...

    async def list(
        self,
        rtype: ResourceType,
        namespace: str | None,
        timeout: float,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 50,
    ) -> dict[str, Any]:
        """A list object (`items`, `metadata.continue` when there are more)."""
        ...

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        timeout: float,
        *,
        previous: bool = False,
        tail_lines: int = 100,
        since_seconds: int | None = None,
        limit_bytes: int = 256 * 1024,
    ) -> str:
        """The tail of one container's log."""
        ...

    async def node_stats(self, node: str, timeout: float) -> dict[str, Any]:
        """The node's kubelet stats summary (`/stats/summary`, through the node proxy)."""
        ...

    @property
    def requests_made(self) -> int:
        """How many requests this reader has sent (for benchmarks and tests)."""
        ...
