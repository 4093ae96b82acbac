"""The test cluster is a real, authenticated, RBAC-enforcing API server."""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes

from tests.fakes.kube_cluster import KUBE_VERSION, KubeCluster


def test_version_is_the_pinned_stamped_build(kube_cluster: KubeCluster) -> None:
    status, body = kube_cluster.request("GET", "/version")
    assert status == 200
    version = json.loads(body)
    assert version["gitVersion"] == KUBE_VERSION == "v1.37.2"
    assert (version["major"], version["minor"]) == ("1", "37")


def test_unknown_token_is_rejected(kube_cluster: KubeCluster) -> None:
    status, _ = kube_cluster.request("GET", "/api/v1/pods", token="not-a-token")
    assert status == 401


def test_kubeconfig_file_reaches_the_cluster_with_tls_verified(
    kube_cluster: KubeCluster, namespace: str, tmp_path: Path
) -> None:
    path = kube_cluster.write_kubeconfig(tmp_path / "kubeconfig")
    client = kubernetes.config.new_client_from_config(config_file=str(path))
    try:
        names = [
            n.metadata.name
            for n in kubernetes.client.CoreV1Api(client).list_namespace(_request_timeout=30).items
        ]
    finally:
        client.close()
    assert namespace in names


def test_audit_log_records_verb_path_and_user(kube_cluster: KubeCluster, namespace: str) -> None:
    token = kube_cluster.service_account_token(namespace, "auditor")
    status, _ = kube_cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods", token=token)
    assert status == 403  # the account has no role
    user = f"system:serviceaccount:{namespace}:auditor"
    (event,) = kube_cluster.wait_for_audit(user=user)
    assert event["verb"] == "list"
    assert event["requestURI"] == f"/api/v1/namespaces/{namespace}/pods"
    assert event["responseStatus"]["code"] == 403
