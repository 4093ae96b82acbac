"""Builders for the cluster-level incidents in examples/: a NotReady node and a
cert-manager Certificate that is not Ready (through a CRD)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import kubernetes

from tests.fakes.kube_cluster import ensure_namespace, free_port
from tests.fakes.kube_crds import ensure_cert_manager_crds
from tests.fakes.kube_objects import MERGE, Scenario, create_event, stamp
from tests.fakes.kubelet import ready_condition, register_node


def nodenotready(api: kubernetes.client.ApiClient, namespace: str, node: str) -> Scenario:
    """A Node whose kubelet stopped posting status (Ready=Unknown, unreachable taints),
    its kubelet port closed, with two pods bound to it in `namespace`."""
    now = datetime.now(UTC)
    unknown = {
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": stamp(now - timedelta(minutes=7)),
        "lastTransitionTime": stamp(now - timedelta(minutes=6)),
    }
    conditions = [ready_condition(**unknown)] + [
        {"type": kind, **unknown} for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ]
    taints = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
    ]
    register_node(api, node, free_port(), taints=taints, conditions=conditions)
    core = kubernetes.client.CoreV1Api(api)
    ensure_namespace(core, namespace)
    for name in ("payment-api-6d9f7c5b8-n0d3a", "cart-service-5c7d9-n0d3b"):
        core.create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": name},
                "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app:1"}]},
            },
            _request_timeout=30,
        )
        core.patch_namespaced_pod_status(
            name,
            namespace,
            {
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "False", "reason": "NodeLost"}],
                }
            },
            _content_type=MERGE,
            _request_timeout=30,
        )
    create_event(
        api,
        "default",
        "Node",
        node,
        "Normal",
        "NodeNotReady",
        f"Node {node} status is now: NodeNotReady",
        count=1,
        source="node-controller",
    )
    return Scenario(namespace, f"/core/Node/{node}", node=node)


def certificate_not_ready(api: kubernetes.client.ApiClient, namespace: str) -> Scenario:
    """demo-cert-gitops/demo-app-cert (cert-manager CRD): Ready=False, its
    ClusterIssuer letsencrypt-prod does not exist, expiry in 6 days."""
    ensure_cert_manager_crds(api)
    now = datetime.now(UTC)
    custom = kubernetes.client.CustomObjectsApi(api)
    group, version = "cert-manager.io", "v1"
    issuer_missing = (
        'Referenced "ClusterIssuer" not found: clusterissuer.cert-manager.io '
        '"letsencrypt-prod" not found'
    )
    certificate: dict[str, Any] = {
        "apiVersion": f"{group}/{version}",
        "kind": "Certificate",
        "metadata": {
            "name": "demo-app-cert",
            "labels": {"argocd.argoproj.io/instance": "demo-app"},
        },
        "spec": {
            "secretName": "demo-app-tls",
            "dnsNames": ["demo.example.com"],
            "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": group},
        },
    }
    created = custom.create_namespaced_custom_object(
        group, version, namespace, "certificates", certificate, _request_timeout=30
    )
    custom.patch_namespaced_custom_object_status(
        group,
        version,
        namespace,
        "certificates",
        "demo-app-cert",
        {
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "Failed",
                        "message": "The certificate request has failed to complete and will be "
                        f"retried: {issuer_missing}",
                        "lastTransitionTime": stamp(now - timedelta(days=2)),
                    },
                    {
                        "type": "Issuing",
                        "status": "False",
                        "reason": "Failed",
                        "message": issuer_missing,
                        "lastTransitionTime": stamp(now - timedelta(hours=1)),
                    },
                ],
                "notAfter": stamp(now + timedelta(days=6)),
                "renewalTime": stamp(now - timedelta(days=2)),
                "failedIssuanceAttempts": 4,
                "lastFailureTime": stamp(now - timedelta(hours=1)),
                "revision": 3,
            }
        },
        _content_type=MERGE,
        _request_timeout=30,
    )
    request_name = "demo-app-cert-4"
    request = custom.create_namespaced_custom_object(
        group,
        version,
        namespace,
        "certificaterequests",
        {
            "apiVersion": f"{group}/{version}",
            "kind": "CertificateRequest",
            "metadata": {
                "name": request_name,
                "ownerReferences": [
                    {
                        "apiVersion": f"{group}/{version}",
                        "kind": "Certificate",
                        "name": "demo-app-cert",
                        "uid": created["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {"issuerRef": certificate["spec"]["issuerRef"], "request": "LS0tLS1CRUdJTg=="},
        },
        _request_timeout=30,
    )
    custom.patch_namespaced_custom_object_status(
        group,
        version,
        namespace,
        "certificaterequests",
        request_name,
        {
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "Pending",
                        "message": issuer_missing,
                    }
                ]
            }
        },
        _content_type=MERGE,
        _request_timeout=30,
    )
    create_event(
        api,
        namespace,
        "CertificateRequest",
        request_name,
        "Warning",
        "IssuerNotFound",
        issuer_missing,
        count=9,
        uid=request["metadata"]["uid"],
        api_version=f"{group}/{version}",
    )
    return Scenario(
        namespace,
        f"{namespace}/cert-manager.io/Certificate/demo-app-cert",
        extra={"certificaterequest": request_name, "issuer": "letsencrypt-prod"},
    )
