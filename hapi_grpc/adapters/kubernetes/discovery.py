"""Kind resolution through the API server's discovery (`/api`, `/apis`).

Design notes: docs/internals.md (`adapters/kubernetes/discovery.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from hapi_grpc.adapters.kubernetes.reader import KubeFailure, KubeFailureKind, ResourceType

__all__ = ["AGGREGATED_ACCEPT", "Discovery", "parse_aggregated"]

AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
)
_MAX_LEGACY_GROUPS = 64
_MAX_MISSES = 256

Fetch = Callable[[str, str, float], Awaitable[dict[str, Any]]]  # path, accept, timeout


def parse_aggregated(document: dict[str, Any]) -> list[ResourceType]:
    """Resource types of an APIGroupDiscoveryList, preferred versions first."""
    types = []
    for group in document.get("items") or []:
        name = (group.get("metadata") or {}).get("name") or ""
        for version in group.get("versions") or []:
            # Each resource in the legacy list's terms (`name`, `kind`, `namespaced`).
            resources = [
                {
                    **res,
                    "name": res.get("resource"),
                    "kind": (res.get("responseKind") or {}).get("kind"),
                    "namespaced": res.get("scope") == "Namespaced",
                }
                for res in version.get("resources") or []
            ]
            types += _parse_resource_list(name, str(version.get("version")), resources)
    return types


def _parse_resource_list(group: str, version: str, resources: Any) -> list[ResourceType]:
    return [
        ResourceType(
            group=group,
            version=version,
            kind=str(r.get("kind")),
            plural=str(r.get("name")),
            namespaced=bool(r.get("namespaced")),
            short_names=tuple(r.get("shortNames") or ()),
        )
        for r in resources or []
        if "/" not in str(r.get("name", "")) and r.get("kind")
    ]


class Discovery:
    """Resolves kinds to resource types; safe for concurrent use."""

    def __init__(self, fetch: Fetch, *, ttl: float = 300.0, min_refresh: float = 10.0) -> None:
        self._fetch = fetch
        self._ttl = ttl
        self._min_refresh = min_refresh
        self._types: list[ResourceType] = []
        self._loaded_at = -float("inf")
        self._lock = asyncio.Lock()
        self._missed: dict[str, float] = {}  # unknown spelling -> when it was last looked up

    async def resolve(self, spelling: str, timeout: float) -> ResourceType:
        now = time.monotonic()
        if now - self._loaded_at > self._ttl:
            await self._refresh(timeout, stale_before=now - self._ttl)
        found = self._match(spelling)
        key = spelling.strip().lower()
        if (
            found is None
            and time.monotonic() - self._missed.get(key, -float("inf")) > self._min_refresh
        ):
            # A kind not seen yet may be a CRD created since the last read:
            # read again, at most once per spelling per `min_refresh`.
            if len(self._missed) >= _MAX_MISSES:
                self._missed.clear()
            self._missed[key] = time.monotonic()
            await self._refresh(timeout, stale_before=time.monotonic() - 0.001)
            found = self._match(spelling)
        if found is None:
            raise KubeFailure(
                KubeFailureKind.UNKNOWN_KIND,
                f"the cluster serves no kind {spelling[:64]!r}; use a kind name such as Pod,"
                " Deployment, Node, or group/version/Kind for custom resources.",
            )
        return found

    async def _refresh(self, timeout: float, stale_before: float) -> None:
        async with self._lock:
            if self._loaded_at > stale_before:
                return  # another caller refreshed while this one waited
            types = await self._load(timeout)
            self._types = types
            self._loaded_at = time.monotonic()

    async def _load(self, timeout: float) -> list[ResourceType]:
        core = await self._fetch("/api", AGGREGATED_ACCEPT, timeout)
        if core.get("kind") == "APIGroupDiscoveryList":
            groups = await self._fetch("/apis", AGGREGATED_ACCEPT, timeout)
            # The core group has no name in /api; it is listed there only.
            return parse_aggregated(core) + parse_aggregated(groups)
        core_v1 = await self._fetch("/api/v1", "", timeout)
        types = _parse_resource_list("", "v1", core_v1.get("resources"))
        listing = await self._fetch("/apis", "", timeout)
        for group in (listing.get("groups") or [])[:_MAX_LEGACY_GROUPS]:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if not preferred:
                continue
            name, _, version = str(preferred).rpartition("/")
            body = await self._fetch(f"/apis/{preferred}", "", timeout)
            types.extend(_parse_resource_list(name, version, body.get("resources")))
        return types

    def _match(self, spelling: str) -> ResourceType | None:
        text = spelling.strip().strip("/")
        group = version = None
        if "/" in text:
            parts = text.split("/")
            text = parts[-1]
            if len(parts) == 2:
                version = parts[0]
                group = "" if version == "v1" else None
                if group is None:  # "apps/Deployment"
                    group, version = parts[0], None
            else:
                group, version = "/".join(parts[:-2]), parts[-2]
                group = "" if group == "core" else group
        elif "." in text:  # certificates.cert-manager.io, Certificate.cert-manager.io
            text, group = text.split(".", 1)
        lowered = text.lower()
        for rtype in self._types:
            if group is not None and rtype.group != group:
                continue
            if version is not None and rtype.version != version:
                continue
            names = {
                rtype.kind.lower(),
                rtype.plural.lower(),
                *(s.lower() for s in rtype.short_names),
            }
            if lowered in names:
                return rtype
        return None
