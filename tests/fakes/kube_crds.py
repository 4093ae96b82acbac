"""Minimal cert-manager CRDs for the test cluster (written here, not copied).

Only what the tests need: the group, names and scope cert-manager serves, a
status subresource, and a schema that keeps spec and status as given.
"""

from __future__ import annotations

import time
from typing import Any

import kubernetes

GROUP = "cert-manager.io"
VERSION = "v1"
# plural -> (kind, scope, short names)
KINDS = {
    "certificates": ("Certificate", "Namespaced", ["cert", "certs"]),
    "certificaterequests": ("CertificateRequest", "Namespaced", ["cr", "crs"]),
    "issuers": ("Issuer", "Namespaced", []),
    "clusterissuers": ("ClusterIssuer", "Cluster", []),
}
_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(plural: str) -> dict[str, Any]:
    kind, scope, short = KINDS[plural]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "listKind": f"{kind}List",
                "shortNames": short,
                "categories": ["cert-manager"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": _OPEN, "status": _OPEN},
                        }
                    },
                }
            ],
        },
    }


def ensure_cert_manager_crds(api: kubernetes.client.ApiClient, timeout: float = 30.0) -> None:
    """Creates the CRDs (idempotent) and waits until each is established and served."""
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    for plural in KINDS:
        try:
            extensions.create_custom_resource_definition(crd(plural), _request_timeout=30)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:
                raise
    custom = kubernetes.client.CustomObjectsApi(api)
    deadline = time.monotonic() + timeout
    for plural in KINDS:
        while True:
            found = extensions.read_custom_resource_definition(
                f"{plural}.{GROUP}", _request_timeout=30
            )
            conditions = (found.status and found.status.conditions) or []
            established = any(c.type == "Established" and c.status == "True" for c in conditions)
            if established:
                try:  # established can precede the handler serving the resource
                    custom.list_cluster_custom_object(
                        GROUP, VERSION, plural, limit=1, _request_timeout=30
                    )
                    break
                except kubernetes.client.ApiException as exc:
                    if exc.status != 404:
                        raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {plural}.{GROUP} not served after {timeout} s")
            time.sleep(0.1)
