"""Custom kinds read through the real kube-apiserver show no secret literal.

Pods and workloads had their env vars redacted by name; the generic view of
every other kind showed `{"name": "DB_PASSWORD", "value": "..."}` as written.
One rule now holds for all kinds.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.sensitive import REDACTED
from tests.fakes.kube_crds import GROUP, VERSION, ensure_cert_manager_crds
from tests.fakes.kube_toolset import context, toolset

DB_PASSWORD = "pg-Sup3r-s3cret-value"
TOKEN_DEFAULT = "default-tok-884422"


def _issuer(name: str) -> dict[str, Any]:
    # An operator-style spec: env literals and parameters as many CRDs carry them.
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Issuer",
        "metadata": {"name": name},
        "spec": {
            "webhook": {
                "env": [
                    {"name": "DB_PASSWORD", "value": DB_PASSWORD},
                    {"name": "LOG_LEVEL", "value": "debug"},
                ],
                "params": [{"name": "api-token", "default": TOKEN_DEFAULT}],
                "config": {"replicas": 2, "endpoint": "https://issuer.example.com"},
            }
        },
    }


async def test_custom_kind_view_hides_secret_named_values(
    reader: ApiServerReader, kube_api: kubernetes.client.ApiClient, namespace: str
) -> None:
    ensure_cert_manager_crds(kube_api)
    kubernetes.client.CustomObjectsApi(kube_api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "issuers", _issuer("webhook-issuer"), _request_timeout=30
    )
    tool = next(t for t in toolset(reader).tools if t.name == "kubernetes_get")
    args = {"kind": "Issuer", "namespace": namespace, "name": "webhook-issuer"}
    result = await tool.run(tool.arguments.model_validate(args), context())
    assert result.status is ToolCallStatus.SUCCESS, result.payload
    shown = json.dumps(result.payload)
    assert DB_PASSWORD not in shown
    assert TOKEN_DEFAULT not in shown
    webhook = result.payload["cluster_data"]["spec"]["webhook"]
    assert webhook["env"] == [
        {"name": "DB_PASSWORD", "value": REDACTED},
        {"name": "LOG_LEVEL", "value": "debug"},  # harmless values stay readable
    ]
    assert webhook["params"] == [{"name": "api-token", "default": REDACTED}]
    assert webhook["config"] == {"replicas": 2, "endpoint": "https://issuer.example.com"}
