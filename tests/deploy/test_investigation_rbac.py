"""The deploy/ investigation role, applied as shipped, against the real authorizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from tests.fakes import kube_fixtures
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kube_crds import ensure_cert_manager_crds
from tests.fakes.kubelet import FakeKubelet

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ROLE = yaml.safe_load((DEPLOY / "clusterrole.yaml").read_text(encoding="utf-8"))
BINDING = yaml.safe_load((DEPLOY / "clusterrolebinding.yaml").read_text(encoding="utf-8"))
(SUBJECT,) = BINDING["subjects"]
GRANTED = [
    (group, resource)
    for rule in ROLE["rules"]
    for group in rule["apiGroups"]
    for resource in rule["resources"]
    if "/" not in resource
]


@pytest.fixture(scope="session")
def investigator(kube_cluster: KubeCluster, kube_api: kubernetes.client.ApiClient) -> str:
    """A token of the ServiceAccount the shipped binding names."""
    ensure_cert_manager_crds(kube_api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube_api)
    for create, body in (
        (rbac.create_cluster_role, ROLE),
        (rbac.create_cluster_role_binding, BINDING),
    ):
        try:
            create(body, _request_timeout=30)
        except kubernetes.client.ApiException as exc:
            if exc.status != 409:
                raise
    return kube_cluster.service_account_token(SUBJECT["namespace"], SUBJECT["name"])


def _collection(cluster: KubeCluster, group: str, resource: str) -> str:
    if not group:
        return f"/api/v1/{resource}"
    status, body = cluster.request("GET", f"/apis/{group}")
    assert status == 200, (group, body)
    return f"/apis/{json.loads(body)['preferredVersion']['groupVersion']}/{resource}"


@pytest.mark.parametrize(
    ("group", "resource"), GRANTED, ids=[f"{g or 'core'}/{r}" for g, r in GRANTED]
)
def test_every_granted_kind_can_be_listed(
    kube_cluster: KubeCluster, investigator: str, group: str, resource: str
) -> None:
    status, body = kube_cluster.request(
        "GET", _collection(kube_cluster, group, resource) + "?limit=1", token=investigator
    )
    assert status == 200, body[:300]
    assert json.loads(body)["kind"].endswith("List")


@pytest.fixture
def incident(
    kube_api: kubernetes.client.ApiClient, namespace: str, node_name: str, kubelet: FakeKubelet
) -> kube_fixtures.Scenario:
    return kube_fixtures.crashloopbackoff(kube_api, namespace, node_name, kubelet)


def test_reads_an_incident_and_its_previous_log(
    kube_cluster: KubeCluster, investigator: str, incident: kube_fixtures.Scenario
) -> None:
    base = f"/api/v1/namespaces/{incident.namespace}/pods/{incident.pod}"
    status, body = kube_cluster.request("GET", base, token=investigator)
    assert status == 200 and json.loads(body)["metadata"]["name"] == incident.pod
    status, body = kube_cluster.request("GET", base + "/log?previous=true", token=investigator)
    assert status == 200 and b"REDIS_URL missing" in body
    status, _ = kube_cluster.request(
        "GET",
        f"/apis/apps/v1/namespaces/{incident.namespace}/deployments/{incident.deployment}",
        token=investigator,
    )
    assert status == 200


def _forbidden_requests(incident: kube_fixtures.Scenario) -> list[tuple[str, str, Any]]:
    ns, pod, secret = incident.namespace, incident.pod, incident.extra["secret"]
    pod_path = f"/api/v1/namespaces/{ns}/pods/{pod}"
    return [
        ("GET", f"/api/v1/namespaces/{ns}/secrets/{secret}", None),
        ("GET", f"/api/v1/namespaces/{ns}/secrets", None),
        ("GET", "/api/v1/secrets", None),
        ("GET", f"/api/v1/namespaces/{ns}/pods?watch=true", None),
        ("DELETE", pod_path, None),
        ("PATCH", pod_path, {"metadata": {"labels": {"touched": "yes"}}}),
        ("POST", f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": "x"}}),
        ("POST", pod_path + "/eviction", {"metadata": {"name": pod}}),
        ("GET", pod_path + "/exec?command=sh&stdout=true", None),
        (
            "PATCH",
            f"/apis/apps/v1/namespaces/{ns}/deployments/{incident.deployment}/scale",
            {"spec": {"replicas": 0}},
        ),
    ]


def test_secrets_and_every_write_are_forbidden(
    kube_cluster: KubeCluster, investigator: str, incident: kube_fixtures.Scenario
) -> None:
    for method, path, body in _forbidden_requests(incident):
        status, answer = kube_cluster.request(method, path, token=investigator, body=body)
        assert status == 403, (method, path, answer[:300])
        assert b"redis-password-do-not-leak" not in answer

    # The audit log saw each refusal under the service account's name.
    user = f"system:serviceaccount:{SUBJECT['namespace']}:{SUBJECT['name']}"
    refused = kube_cluster.wait_for_audit(
        lambda e: (
            e["responseStatus"]["code"] == 403
            and (incident.namespace in e["requestURI"] or e["requestURI"] == "/api/v1/secrets")
        ),
        user=user,
        count=len(_forbidden_requests(incident)),
    )
    assert {"get", "list", "watch", "delete", "patch", "create"} <= {e["verb"] for e in refused}
    # And the pod is untouched.
    status, body = kube_cluster.request(
        "GET", f"/api/v1/namespaces/{incident.namespace}/pods/{incident.pod}"
    )
    assert status == 200 and "touched" not in json.loads(body)["metadata"].get("labels", {})
