"""The kinds the test API server serves, read through its discovery.

The index is built the way the Kubernetes toolset resolves kinds
(`hapi_grpc.adapters.kubernetes.discovery`): the aggregated discovery
documents of `/api` and `/apis`, parsed by the same function, preferred
versions first. It also records which resources have a `status`
subresource, the one the loader writes status through. Kinds a case
defines with its own CustomResourceDefinition, and the cert-manager kinds
the harness installs on demand, count as creatable before they are served.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hapi_grpc.adapters.kubernetes.discovery import AGGREGATED_ACCEPT, parse_aggregated
from hapi_grpc.adapters.kubernetes.reader import ResourceType

Fetch = Callable[[str, str], dict[str, Any]]  # path, Accept -> the JSON document

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"
DISCOVERY_TIMEOUT = 30.0


class DiscoveryError(RuntimeError):
    """The API server's discovery could not be read."""


@dataclass(frozen=True)
class Served:
    """One kind as the API server serves it, and whether it has a status subresource."""

    rtype: ResourceType
    status: bool

    @property
    def namespaced(self) -> bool:
        return self.rtype.namespaced

    @property
    def api_version(self) -> str:
        return self.rtype.api_version

    def path(self, namespace: str | None, name: str | None = None) -> str:
        t = self.rtype
        prefix = f"/apis/{t.group}/{t.version}" if t.group else f"/api/{t.version}"
        base = f"{prefix}/namespaces/{namespace}" if t.namespaced and namespace else prefix
        base = f"{base}/{t.plural}"
        return f"{base}/{name}" if name else base


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> ("apps", "v1"); `v1` -> ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


def is_crd(obj: dict[str, Any]) -> bool:
    return bool(obj.get("kind") == CRD_KIND)


def crd_kinds(crd: dict[str, Any]) -> list[Served]:
    """The kinds a CustomResourceDefinition document defines, one per served version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    found = []
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or version.get("served") is False:
            continue
        rtype = ResourceType(
            group=str(spec.get("group", "")),
            version=str(version.get("name", "")),
            kind=str(names.get("kind", "")),
            plural=str(names.get("plural", "")),
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
        )
        found.append(Served(rtype, "status" in (version.get("subresources") or {})))
    return found


def _status_subresources(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    found = set()
    for group in document.get("items") or []:
        name = (group.get("metadata") or {}).get("name") or ""
        for version in group.get("versions") or []:
            for res in version.get("resources") or []:
                subs = {s.get("subresource") for s in res.get("subresources") or []}
                if "status" in subs:
                    found.add((name, str(version.get("version")), str(res.get("resource"))))
    return found


def _first(candidates: Iterable[Served], api_version: str | None, kind: str) -> Served | None:
    group_version = split_api_version(api_version) if api_version else None
    for served in candidates:
        t = served.rtype
        if t.kind == kind and (group_version is None or group_version == (t.group, t.version)):
            return served
    return None


class KindIndex:
    """Resolves (apiVersion, kind) to a served kind; refreshed on demand (after CRDs)."""

    def __init__(self, fetch: Fetch, provided: Iterable[dict[str, Any]] = ()) -> None:
        self._fetch = fetch
        self._served: list[Served] = []
        # CRDs the harness installs itself when a case needs them.
        self.provided = tuple(provided)
        self._provided_kinds = [s for crd in self.provided for s in crd_kinds(crd)]
        self.refresh()

    def refresh(self) -> None:
        core = self._fetch("/api", AGGREGATED_ACCEPT)
        if core.get("kind") != "APIGroupDiscoveryList":
            raise DiscoveryError("the API server does not serve aggregated discovery at /api")
        groups = self._fetch("/apis", AGGREGATED_ACCEPT)
        status = _status_subresources(core) | _status_subresources(groups)
        self._served = [
            Served(t, (t.group, t.version, t.plural) in status)
            for t in parse_aggregated(core) + parse_aggregated(groups)
        ]

    def find(self, api_version: str | None, kind: str) -> Served | None:
        """The served kind; without `apiVersion`, its preferred version (core first)."""
        return _first(self._served, api_version, kind)

    def provided_for(self, api_version: str | None, kind: str) -> Served | None:
        """A kind the harness can install (not served yet)."""
        return _first(self._provided_kinds, api_version, kind)


def kube_fetch(url: str, token: str, context: ssl.SSLContext) -> Fetch:
    """A discovery reader for the test cluster (admin token), with a timeout."""

    def fetch(path: str, accept: str) -> dict[str, Any]:
        req = urllib.request.Request(url + path)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Accept", accept or "application/json")
        try:
            with urllib.request.urlopen(req, context=context, timeout=DISCOVERY_TIMEOUT) as resp:
                body = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise DiscoveryError(f"discovery {path}: {exc}") from None
        return body if isinstance(body, dict) else {}

    return fetch
