"""The workflow catalog as resources of the real test cluster.

`ensure_catalog_crds` installs the CRDs shipped under deploy/optional/crds (server-side
apply, then waits until they are served); `reader_token` is a service-account
token bound to the shipped read role (deploy/optional/kubernetes-catalog-rbac.yaml);
`CatalogResources` creates, changes and deletes ActionType and RemediationWorkflow
objects in one namespace, statuses through the status subresource.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.fakes.kube_cluster import KubeCluster

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "optional" / "crds"
RBAC = ROOT / "deploy" / "optional" / "kubernetes-catalog-rbac.yaml"
GROUP_PATH = "/apis/kubernaut.ai/v1alpha1"
FIELD_MANAGER = "hapi-grpc-catalog-test"


def apply(cluster: KubeCluster, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Server-side apply of `obj` at `path` (its object URL)."""
    status, body = _call(
        cluster, "PATCH", f"{path}?fieldManager={FIELD_MANAGER}&force=true", obj, "apply"
    )
    assert status in (200, 201), body
    return body


def _call(
    cluster: KubeCluster, method: str, path: str, body: Any = None, patch: str = "merge"
) -> tuple[int, dict[str, Any]]:
    import ssl
    import urllib.error
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(cluster.url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {cluster.admin_token}")
    if data is not None:
        kinds = {"merge": "application/merge-patch+json", "apply": "application/apply-patch+yaml"}
        request.add_header(
            "Content-Type", kinds[patch] if method == "PATCH" else "application/json"
        )
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw or b"{}")
        except ValueError:
            return exc.code, {"message": raw.decode(errors="replace")}


def ensure_catalog_crds(cluster: KubeCluster, timeout: float = 30.0) -> None:
    """The shipped CRDs, applied and served (idempotent)."""
    for path in sorted(CRDS.glob("*.kubernaut.ai.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        name = crd["metadata"]["name"]
        apply(cluster, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", crd)
    deadline = time.monotonic() + timeout
    for plural in ("actiontypes", "remediationworkflows"):
        while _call(cluster, "GET", f"{GROUP_PATH}/{plural}?limit=1")[0] != 200:
            assert time.monotonic() < deadline, f"{plural} not served after {timeout} s"
            time.sleep(0.1)


def reader_token(cluster: KubeCluster, namespace: str, name: str) -> str:
    """A token of service account namespace/name bound to the shipped read role only."""
    role, binding = list(yaml.safe_load_all(RBAC.read_text(encoding="utf-8")))
    apply(cluster, f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role['metadata']['name']}",
          role)  # fmt: skip
    bound = copy.deepcopy(binding)
    bound["metadata"]["name"] = f"catalog-reader-{namespace}-{name}"
    bound["subjects"] = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
    apply(
        cluster,
        f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{bound['metadata']['name']}",
        bound,
    )
    return cluster.service_account_token(namespace, name)


def parameter(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "type": "string", "required": True, **fields}


MEMORY_PARAMETERS = [
    parameter("TARGET_RESOURCE_NAMESPACE", description="Namespace of the Deployment"),
    parameter("TARGET_RESOURCE_NAME", description="Name of the Deployment"),
    parameter("MEMORY_LIMIT_NEW", pattern="^[0-9]+(Mi|Gi)$", description="New limit"),
]


class CatalogResources:
    """ActionType and RemediationWorkflow objects of one namespace."""

    def __init__(self, cluster: KubeCluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace

    def _path(self, plural: str, name: str = "") -> str:
        base = f"{GROUP_PATH}/namespaces/{self.namespace}/{plural}"
        return f"{base}/{name}" if name else base

    def create(self, plural: str, obj: dict[str, Any], status: str | None) -> dict[str, Any]:
        code, body = _call(self.cluster, "POST", self._path(plural), obj)
        assert code == 201, body
        if status is not None:
            self.set_status(plural, obj["metadata"]["name"], status)
        return body

    def set_status(self, plural: str, name: str, status: str) -> None:
        code, body = _call(
            self.cluster,
            "PATCH",
            self._path(plural, name) + "/status",
            {"status": {"catalogStatus": status}},
        )
        assert code == 200, body

    def patch(self, plural: str, name: str, change: dict[str, Any]) -> None:
        code, body = _call(self.cluster, "PATCH", self._path(plural, name), change)
        assert code == 200, body

    def delete(self, plural: str, name: str) -> None:
        code, body = _call(self.cluster, "DELETE", self._path(plural, name))
        assert code == 200, body

    def action_type(
        self, resource: str, name: str, status: str | None = "Active"
    ) -> dict[str, Any]:
        obj = {
            "apiVersion": "kubernaut.ai/v1alpha1",
            "kind": "ActionType",
            "metadata": {"name": resource},
            "spec": {
                "name": name,
                "description": {
                    "what": f"The {name} remediation.",
                    "whenToUse": f"When {name} is what the evidence asks for.",
                },
            },
        }
        return self.create("actiontypes", obj, status)

    def workflow(
        self,
        name: str,
        action_type: str,
        *,
        status: str | None = "Active",
        version: str = "1.0.0",
        description: dict[str, str] | None = None,
        labels: dict[str, Any] | None = None,
        parameters: list[dict[str, Any]] | None = None,
        **spec: Any,
    ) -> dict[str, Any]:
        obj = {
            "apiVersion": "kubernaut.ai/v1alpha1",
            "kind": "RemediationWorkflow",
            "metadata": {"name": name},
            "spec": {
                "version": version,
                "actionType": action_type,
                "description": description
                or {
                    "what": "Raise the memory limit of a Deployment's container",
                    "whenToUse": "The container is OOMKilled at a steady working set",
                    "whenNotToUse": "Usage grows without bound between restarts (a leak)",
                },
                "labels": labels
                or {
                    "severity": ["critical", "high"],
                    "environment": ["*"],
                    "component": ["apps/v1/Deployment"],
                    "priority": "*",
                },
                "parameters": MEMORY_PARAMETERS if parameters is None else parameters,
                **spec,
            },
        }
        return self.create("remediationworkflows", obj, status)


async def eventually(
    check: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05
) -> Any:
    """Poll `check` (sync or async) until it returns a truthy value; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {check}")
        await asyncio.sleep(interval)
