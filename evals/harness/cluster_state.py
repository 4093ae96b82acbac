"""Loads a case's recorded cluster state into the test API server, and removes it.

Kinds are resolved through the API server's discovery (`kinds.KindIndex`);
objects are created in the dependency order documented in `cases.py`, then
their `status` is written through the status subresource, as the controllers
that do not run in the test cluster would have. Owner references and event
subjects written without `uid`/`apiVersion` are resolved against what was
created. Pods on a node the case does not define get a Ready node served by
the test kubelet, so their logs go through the real apiserver.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evals.harness.kinds import DiscoveryError, KindIndex, Served, crd_kinds, is_crd
from hapi_grpc.cases.case import Case

# The steps of the creation order (see `cases.py`); a kind not named here is
# placed by its scope: cluster-scoped objects at 1, namespaced ones at 3.
_STEP = {
    "Namespace": 0,
    "CustomResourceDefinition": 0,
    "ServiceAccount": 2,
    "ConfigMap": 2,
    "Secret": 2,
    "LimitRange": 2,
    "Pod": 4,
    "ResourceQuota": 5,
    "Event": 6,
}
ESTABLISH_TIMEOUT = 30.0  # a CRD served / a deleted CRD gone
_POLL = 0.1
_ZERO_UID = "00000000-0000-0000-0000-000000000000"

Request = Callable[..., tuple[int, bytes]]  # (method, path, body=) -> (status, body)


class ClusterStateError(RuntimeError):
    """An object of a case could not be created; the message names the case and object."""


@dataclass
class LoadedState:
    """What one case put into the cluster, newest last, for `unload`."""

    created: list[tuple[str, str]] = field(default_factory=list)  # (kind, path)


def _message(status: int, data: bytes) -> str:
    """The API server's own message (a Status object), else the start of its body."""
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    text = body.get("message") if isinstance(body, dict) else None
    return f"{status} {text or data[:300]!r}"


def _node_status(
    status: dict[str, Any], kubelet_port: int, address: str = "127.0.0.1"
) -> dict[str, Any]:
    status = dict(status)
    # Logs of pods on this node (and its stats summary) reach the test kubelet through these.
    status["addresses"] = [
        {"type": "InternalIP", "address": address},
        {"type": "Hostname", "address": address},
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": kubelet_port}}
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    status.setdefault("capacity", status.get("allocatable", capacity))
    status.setdefault("allocatable", status["capacity"])
    status.setdefault(
        "conditions",
        [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            }
        ],
    )
    return status


def creation_order(objects: list[dict[str, Any]], index: KindIndex) -> list[dict[str, Any]]:
    """The objects sorted by step, then by owner depth; stable within a step.

    An owned object takes the later of its own step and its owner's, so it
    is never created before an owner the case defines.
    """
    by_name = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects
    }
    memo: dict[int, tuple[int, int]] = {}

    def key(obj: dict[str, Any], seen: frozenset[int] = frozenset()) -> tuple[int, int]:
        if id(obj) in memo:
            return memo[id(obj)]
        kind = obj["kind"]
        step = _STEP.get(kind)
        if step is None:
            served = index.find(obj.get("apiVersion"), kind)
            step = 3 if served is None or served.namespaced else 1
        depth = 0
        namespace = obj["metadata"].get("namespace", "")
        for ref in obj["metadata"].get("ownerReferences") or []:
            owner = by_name.get((ref.get("kind"), namespace, ref.get("name"))) or by_name.get(
                (ref.get("kind"), "", ref.get("name"))
            )
            if owner is None or id(owner) in seen or owner is obj:
                continue  # not in the case, or a cycle: nothing to wait for
            owner_step, owner_depth = key(owner, seen | {id(obj)})
            step, depth = max(step, owner_step), max(depth, owner_depth + 1)
        memo[id(obj)] = (step, depth)
        return step, depth

    return sorted(objects, key=key)


class ClusterLoader:
    """Creates and removes case objects through `request(method, path, body=)`."""

    def __init__(self, request: Request, kubelet_port: int, index: KindIndex) -> None:
        self._request = request
        self._kubelet_port = kubelet_port
        self.index = index
        self._uids: dict[tuple[str, str, str], tuple[str, str]] = {}
        self._namespaces: set[str] = set()
        self._endpoints: dict[str, tuple[str, int]] = {}

    def refresh(self) -> None:
        """Reads discovery again (after CRDs come or go)."""
        try:
            self.index.refresh()
        except DiscoveryError as exc:
            raise ClusterStateError(str(exc)) from None

    def _ensure_namespace(self, name: str) -> None:
        if name in self._namespaces:
            return
        body = {"metadata": {"name": name}}
        status, data = self._request("POST", "/api/v1/namespaces", body=body)
        if status >= 300 and status != 409:
            raise ClusterStateError(f"Namespace {name}: {_message(status, data)}")
        self._namespaces.add(name)

    def load(self, case: Case, endpoints: dict[str, tuple[str, int]] | None = None) -> LoadedState:
        """Creates the case's objects; a Node in `endpoints` gets that kubelet address and
        port (a node proxy request, such as its stats summary, refuses loopback)."""
        self._endpoints = endpoints or {}
        state = LoadedState()
        objects = [json.loads(json.dumps(o)) for o in case.objects]
        defined_nodes = {o["metadata"]["name"] for o in objects if o["kind"] == "Node"}
        for node in sorted(
            {
                o.get("spec", {}).get("nodeName")
                for o in objects
                if o["kind"] == "Pod" and o.get("spec", {}).get("nodeName")
            }
            - defined_nodes
        ):
            objects.append({"kind": "Node", "metadata": {"name": node}, "status": {}})
        default_ns = case.request["incident"].get("signal", {}).get("namespace") or "default"
        try:
            crds = [o for o in objects if is_crd(o)]
            for crd in crds:
                self._create(crd, default_ns, state)
            if crds:
                self._await_served([s for crd in crds for s in crd_kinds(crd)])
            rest = [o for o in objects if not is_crd(o)]
            for obj in rest:
                served = self.index.find(obj.get("apiVersion"), obj["kind"])
                if served is not None and served.namespaced:
                    obj["metadata"].setdefault("namespace", default_ns)
            for obj in creation_order(rest, self.index):
                self._create(obj, default_ns, state)
        except ClusterStateError as exc:
            self.unload(state)
            raise ClusterStateError(f"case {case.name}: {exc}") from None
        return state

    def _await_served(self, kinds: list[Served]) -> None:
        """Waits until discovery lists every kind the case's CRDs define and each answers."""
        deadline = time.monotonic() + ESTABLISH_TIMEOUT
        while True:
            self.refresh()
            # Discovery can list a kind a moment before its handler serves it.
            missing = [
                s.rtype.kind
                for s in kinds
                if not self.index.find(s.api_version, s.rtype.kind)
                or self._request("GET", s.path(None) + "?limit=1")[0] != 200
            ]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ClusterStateError(
                    f"CustomResourceDefinition for {', '.join(missing)} not served after"
                    f" {ESTABLISH_TIMEOUT:.0f} s"
                )
            time.sleep(_POLL)

    def _create(self, obj: dict[str, Any], default_ns: str, state: LoadedState) -> None:
        kind = obj["kind"]
        meta = obj.setdefault("metadata", {})
        name = meta["name"]
        served = self.index.find(obj.get("apiVersion"), kind)
        if served is None:  # the run checks kinds first; this is a CRD that went away
            raise ClusterStateError(f"{kind} {name}: the API server serves no such kind")
        namespace = meta.setdefault("namespace", default_ns) if served.namespaced else None
        if namespace:
            self._ensure_namespace(namespace)
        if kind == "Namespace":
            self._ensure_namespace(name)
            return
        obj["apiVersion"] = obj.get("apiVersion", served.api_version)
        status = obj.pop("status", None)
        if kind == "Node":
            address, port = self._endpoints.get(name, ("127.0.0.1", self._kubelet_port))
            status = _node_status(status or {}, port, address)
        if status and not served.status:
            obj["status"] = status  # no subresource: status is part of the object
        for ref in meta.get("ownerReferences", []):
            self._resolve(ref, namespace or "")
            ref.setdefault("controller", True)
        if kind == "Event":
            subject = obj.setdefault("involvedObject", {})
            subject_kind = self.index.find(subject.get("apiVersion"), subject.get("kind", ""))
            if subject_kind is not None and subject_kind.namespaced:
                subject.setdefault("namespace", namespace)
            self._resolve(subject, namespace or "")
        where = f"{namespace}/{name}" if namespace else name
        status_code, data = self._request("POST", served.path(namespace), body=obj)
        if status_code >= 300:
            raise ClusterStateError(f"{kind} {where}: {_message(status_code, data)}")
        created = json.loads(data)
        path = served.path(namespace, name)
        state.created.append((kind, path))
        self._uids[(kind, namespace or "", name)] = (
            created["metadata"]["uid"],
            obj["apiVersion"],
        )
        if status and served.status:
            status_code, data = self._request("PATCH", path + "/status", body={"status": status})
            if status_code >= 300:
                raise ClusterStateError(f"{kind} {where} status: {_message(status_code, data)}")

    def _resolve(self, ref: dict[str, Any], namespace: str) -> None:
        kind = ref.get("kind", "")
        served = self.index.find(ref.get("apiVersion"), kind)
        ns = ref.get("namespace", namespace) if served is not None and served.namespaced else ""
        known = self._uids.get((kind, ns, ref.get("name", "")))
        if known:
            ref.setdefault("uid", known[0])
            ref.setdefault("apiVersion", known[1])
        elif served is not None:
            ref.setdefault("apiVersion", served.api_version)
            ref.setdefault("uid", _ZERO_UID)

    def unload(self, state: LoadedState) -> None:
        """Deletes what `load` created, newest first, without grace (no kubelet waits).

        No controller runs to remove finalizers (the protection admission puts
        them on claims and volumes), so the loader removes them; a deleted
        CRD is awaited, so the next case may define it again.
        """
        crds = False
        for kind, path in reversed(state.created):
            status, data = self._request("DELETE", path, body={"gracePeriodSeconds": 0})
            try:
                body = json.loads(data) if status < 300 else {}
            except ValueError:
                body = {}
            if isinstance(body, dict) and (body.get("metadata") or {}).get("finalizers"):
                self._request("PATCH", path, body={"metadata": {"finalizers": None}})
            if kind == "CustomResourceDefinition":
                self._await_gone(path)
                crds = True
        state.created.clear()
        if crds:
            self.refresh()  # the kinds they defined are no longer served

    def _await_gone(self, path: str) -> None:
        deadline = time.monotonic() + ESTABLISH_TIMEOUT
        while self._request("GET", path)[0] != 404 and time.monotonic() < deadline:
            time.sleep(_POLL)
