"""Loads a case's recorded cluster state into the test API server, and removes it.

Objects are created in dependency order (nodes, owners before what they own,
events last), then their `status` is written through the status subresource,
as the controllers that do not run in the test cluster would have. Owner
references and event subjects written without `uid`/`apiVersion` are resolved
against what was created. Pods on a node the case does not define get a Ready
node served by the test kubelet, so their logs go through the real apiserver.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from evals.harness.cases import Case

# kind -> (API path prefix, plural, namespaced, apiVersion, has a status subresource)
KINDS: dict[str, tuple[str, str, bool, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False, "v1", False),
    "Node": ("/api/v1", "nodes", False, "v1", True),
    "Pod": ("/api/v1", "pods", True, "v1", True),
    "ConfigMap": ("/api/v1", "configmaps", True, "v1", False),
    "Service": ("/api/v1", "services", True, "v1", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True, "v1", False),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True, "v1", True),
    "Event": ("/api/v1", "events", True, "v1", False),
    "Deployment": ("/apis/apps/v1", "deployments", True, "apps/v1", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True, "apps/v1", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True, "apps/v1", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True, "apps/v1", True),
    "Job": ("/apis/batch/v1", "jobs", True, "batch/v1", True),
    "CronJob": ("/apis/batch/v1", "cronjobs", True, "batch/v1", True),
    "HorizontalPodAutoscaler": (
        "/apis/autoscaling/v2",
        "horizontalpodautoscalers",
        True,
        "autoscaling/v2",
        True,
    ),
    "PodDisruptionBudget": (
        "/apis/policy/v1",
        "poddisruptionbudgets",
        True,
        "policy/v1",
        True,
    ),
    "Certificate": ("/apis/cert-manager.io/v1", "certificates", True, "cert-manager.io/v1", True),
    "CertificateRequest": (
        "/apis/cert-manager.io/v1",
        "certificaterequests",
        True,
        "cert-manager.io/v1",
        True,
    ),
}
# Creation order: what others point at comes first.
_ORDER = {
    "Namespace": 0,
    "Node": 1,
    "CronJob": 2,
    "Deployment": 2,
    "StatefulSet": 2,
    "DaemonSet": 2,
    "Certificate": 2,
    "ReplicaSet": 3,
    "Job": 3,
    "CertificateRequest": 3,
    "Pod": 4,
    "Event": 9,
}
CERT_MANAGER_KINDS = {"Certificate", "CertificateRequest"}


class ClusterStateError(RuntimeError):
    """An object of a case could not be created; the message names the case and object."""


@dataclass
class LoadedState:
    """What one case put into the cluster, newest last, for `unload`."""

    created: list[tuple[str, str]] = field(default_factory=list)  # (kind, path)


def _path(kind: str, namespace: str | None, name: str | None = None) -> str:
    prefix, plural, namespaced, _, _ = KINDS[kind]
    base = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    return f"{base}/{name}" if name else base


def unsupported_kinds(case: Case) -> list[str]:
    return sorted({o["kind"] for o in case.objects if o["kind"] not in KINDS})


def _node_status(status: dict[str, Any], kubelet_port: int) -> dict[str, Any]:
    status = dict(status)
    # Logs of pods on this node reach the test kubelet through these.
    status["addresses"] = [
        {"type": "InternalIP", "address": "127.0.0.1"},
        {"type": "Hostname", "address": "127.0.0.1"},
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


class ClusterLoader:
    """Creates and removes case objects through `request(method, path, body)`."""

    def __init__(self, request: Any, kubelet_port: int) -> None:
        self._request = request
        self._kubelet_port = kubelet_port
        self._uids: dict[tuple[str, str, str], tuple[str, str]] = {}
        self._namespaces: set[str] = set()

    def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        status, data = self._request(method, path, body=body)
        if status >= 300:
            raise ClusterStateError(f"{method} {path}: {status} {data[:300]!r}")
        return dict(json.loads(data)) if data else {}

    def _ensure_namespace(self, name: str) -> None:
        if name in self._namespaces:
            return
        body = {"metadata": {"name": name}}
        status, data = self._request("POST", "/api/v1/namespaces", body=body)
        if status >= 300 and status != 409:
            raise ClusterStateError(f"namespace {name}: {status} {data[:300]!r}")
        self._namespaces.add(name)

    def load(self, case: Case) -> LoadedState:
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
        objects.sort(key=lambda o: _ORDER.get(o["kind"], 5))
        default_ns = case.request["incident"].get("signal", {}).get("namespace") or "default"
        try:
            for obj in objects:
                self._create(obj, default_ns, state)
        except ClusterStateError as exc:
            self.unload(state)
            raise ClusterStateError(f"case {case.name}: {exc}") from None
        return state

    def _create(self, obj: dict[str, Any], default_ns: str, state: LoadedState) -> None:
        kind = obj["kind"]
        _, _, namespaced, api_version, has_status = KINDS[kind]
        meta = obj.setdefault("metadata", {})
        name = meta["name"]
        namespace = meta.setdefault("namespace", default_ns) if namespaced else None
        if namespace:
            self._ensure_namespace(namespace)
        obj["apiVersion"] = obj.get("apiVersion", api_version)
        status = obj.pop("status", None)
        if kind == "Node":
            status = _node_status(status or {}, self._kubelet_port)
        for ref in meta.get("ownerReferences", []):
            self._resolve(ref, namespace or "")
            ref.setdefault("controller", True)
        if kind == "Event":
            subject = obj.setdefault("involvedObject", {})
            if KINDS.get(subject.get("kind", ""), ("", "", False))[2]:
                subject.setdefault("namespace", namespace)
            self._resolve(subject, namespace or "")
        if kind == "Namespace":
            self._ensure_namespace(name)
            return
        created = self._call("POST", _path(kind, namespace), obj)
        path = _path(kind, namespace, name)
        state.created.append((kind, path))
        self._uids[(kind, namespace or "", name)] = (
            created["metadata"]["uid"],
            obj["apiVersion"],
        )
        if status and has_status:
            self._call("PATCH", path + "/status", {"status": status})

    def _resolve(self, ref: dict[str, Any], namespace: str) -> None:
        kind = ref.get("kind", "")
        ns = ref.get("namespace", namespace) if KINDS.get(kind, ("",) * 3)[2] else ""
        known = self._uids.get((kind, ns, ref.get("name", "")))
        if known:
            ref.setdefault("uid", known[0])
            ref.setdefault("apiVersion", known[1])
        elif kind in KINDS:
            ref.setdefault("apiVersion", KINDS[kind][3])
            ref.setdefault("uid", "00000000-0000-0000-0000-000000000000")

    def unload(self, state: LoadedState) -> None:
        """Deletes what `load` created, newest first, without grace (no kubelet waits)."""
        for _kind, path in reversed(state.created):
            self._request("DELETE", path, body={"gracePeriodSeconds": 0})
        state.created.clear()
