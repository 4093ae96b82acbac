"""deploy/ as `kubectl apply -k` sends it, against the real API server of the
test cluster: every object accepted by a server-side dry-run apply, and the
service account's rights checked by the server's own authorizer
(SubjectAccessReview)."""

from __future__ import annotations

import copy
import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from tests.fakes.kube_catalog import ensure_catalog_crds
from tests.fakes.kube_cluster import KubeCluster, kube_cluster
from tests.fakes.kube_crds import ensure_cert_manager_crds

__all__ = ["kube_cluster"]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUSTOMIZE_VERSION = "v5.8.0"
# Where the TokenReview binding is not part of the base, operators add this
# file for HAPI_AUTH_MODE=tokenreview; applied with the base when present.
TOKENREVIEW_BINDING = DEPLOY / "optional" / "tokenreview-rbac.yaml"
ACCOUNT = ("hapi", "hapi-grpc")
FIELD_MANAGER = "hapi-grpc-deploy-test"
INVESTIGATOR = "hapi-grpc-investigator"  # the ClusterRole of the investigation tools

# (verb, group, resource, subresource, allowed) for the service account.
# Reads: every kind the Kubernetes toolset reads; writes, secrets, exec and
# port-forward: never. Cluster-wide unless a namespace makes no difference.
EXPECTED: list[tuple[str, str, str, str, bool]] = [
    ("get", "", "pods", "", True),
    ("list", "", "pods", "", True),
    ("get", "", "pods", "log", True),
    ("list", "", "events", "", True),
    ("list", "events.k8s.io", "events", "", True),
    ("get", "", "nodes", "", True),
    ("list", "", "namespaces", "", True),
    ("list", "", "services", "", True),
    ("list", "", "endpoints", "", True),
    ("list", "", "persistentvolumeclaims", "", True),
    ("get", "", "configmaps", "", True),
    ("list", "apps", "deployments", "", True),
    ("get", "apps", "replicasets", "", True),
    ("list", "apps", "statefulsets", "", True),
    ("list", "apps", "daemonsets", "", True),
    ("list", "batch", "jobs", "", True),
    ("get", "batch", "cronjobs", "", True),
    ("list", "policy", "poddisruptionbudgets", "", True),
    ("list", "autoscaling", "horizontalpodautoscalers", "", True),
    ("list", "networking.k8s.io", "ingresses", "", True),
    ("list", "cert-manager.io", "certificates", "", True),
    ("list", "apiextensions.k8s.io", "customresourcedefinitions", "", True),
    ("create", "authentication.k8s.io", "tokenreviews", "", True),
    ("create", "authorization.k8s.io", "subjectaccessreviews", "", True),
    ("get", "", "secrets", "", False),
    ("list", "", "secrets", "", False),
    ("watch", "", "secrets", "", False),
    ("watch", "", "pods", "", False),
    ("create", "", "pods", "", False),
    ("delete", "", "pods", "", False),
    ("patch", "apps", "deployments", "", False),
    ("update", "", "configmaps", "", False),
    ("create", "", "events", "", False),
    ("deletecollection", "", "pods", "", False),
    ("create", "", "pods", "exec", False),
    ("get", "", "pods", "exec", False),
    ("create", "", "pods", "attach", False),
    ("create", "", "pods", "portforward", False),
    ("get", "", "pods", "portforward", False),
    ("create", "", "serviceaccounts", "token", False),
    ("escalate", "rbac.authorization.k8s.io", "clusterroles", "", False),
    ("bind", "rbac.authorization.k8s.io", "clusterroles", "", False),
    ("impersonate", "", "serviceaccounts", "", False),
]


# --- rendering -----------------------------------------------------------------


def kustomize() -> Path:
    override = os.environ.get("HAPI_KUSTOMIZE")
    linked = ROOT / ".tools" / "kustomize"
    cache = Path(os.environ.get("HAPI_TOOLS_CACHE", Path.home() / ".cache" / "hapi-grpc"))
    for candidate in (
        Path(override) if override else None,
        linked,
        cache / f"kustomize-{KUSTOMIZE_VERSION}",
    ):
        if candidate is not None and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(
        "kustomize missing: build it once with `make kube` (or ./scripts/ensure_kustomize.sh)",
        pytrace=False,
    )


def render(directory: Path) -> list[dict[str, Any]]:
    """`kustomize build`: what `kubectl apply -k` applies."""
    result = subprocess.run(
        [str(kustomize()), "build", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def optional_documents() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted((DEPLOY / "optional").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc
    ]


# --- the API server --------------------------------------------------------------


def call(
    cluster: KubeCluster, method: str, path: str, body: Any = None, content: str = ""
) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(cluster.url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {cluster.admin_token}")
    if data is not None:
        request.add_header("Content-Type", content or "application/json")
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, _json(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, _json(exc.read())


def _json(raw: bytes) -> dict[str, Any]:
    try:
        return dict(json.loads(raw or b"{}"))
    except ValueError:  # e.g. the plain "404 page not found" of an unserved group
        return {"message": raw.decode(errors="replace")}


def resource_path(cluster: KubeCluster, obj: dict[str, Any]) -> str:
    """The object's URL, from the server's discovery of its apiVersion."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    status, listing = call(cluster, "GET", base)
    assert status == 200, f"{api_version} is not served: {listing}"
    (resource,) = [r for r in listing["resources"] if r["kind"] == kind and "/" not in r["name"]]
    namespace = obj["metadata"].get("namespace")
    if resource["namespaced"]:
        assert namespace, f"{kind}/{obj['metadata']['name']} has no namespace"
        base += f"/namespaces/{namespace}"
    return f"{base}/{resource['name']}/{obj['metadata']['name']}"


def apply(
    cluster: KubeCluster, obj: dict[str, Any], *, dry_run: bool
) -> tuple[int, dict[str, Any]]:
    """Server-side apply, as `kubectl apply --server-side [--dry-run=server]`."""
    query = f"fieldManager={FIELD_MANAGER}&force=true" + ("&dryRun=All" if dry_run else "")
    return call(
        cluster,
        "PATCH",
        f"{resource_path(cluster, obj)}?{query}",
        obj,
        "application/apply-patch+yaml",
    )


def ensure_service_monitor_crd(cluster: KubeCluster) -> None:
    """The Prometheus Operator's ServiceMonitor kind, registered (names and
    scope only; tests/deploy/test_manifests.py checks its fields offline)."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {
                "plural": "servicemonitors",
                "singular": "servicemonitor",
                "kind": "ServiceMonitor",
                "listKind": "ServiceMonitorList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    status, body = apply(cluster, crd, dry_run=False)
    assert status in (200, 201), body
    deadline = time.monotonic() + 30
    path = "/apis/monitoring.coreos.com/v1"
    while call(cluster, "GET", path)[0] != 200:  # bounded by the deadline
        assert time.monotonic() < deadline, "ServiceMonitor CRD not served within 30 s"
        time.sleep(0.2)


def can(cluster: KubeCluster, user: tuple[str, str], expectation: tuple[str, ...]) -> bool:
    verb, group, resource, subresource = expectation[:4]
    namespace, name = user
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{namespace}:{name}",
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ],
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource,
                "subresource": subresource,
                "namespace": "payments",
            },
        },
    }
    status, body = call(
        cluster, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review
    )
    assert status == 201, body
    return bool(body["status"].get("allowed"))


def mismatches(cluster: KubeCluster, user: tuple[str, str]) -> list[str]:
    wrong = []
    for expectation in EXPECTED:
        allowed = can(cluster, user, expectation)
        if allowed != expectation[4]:
            wrong.append(describe(expectation, allowed))
    return wrong


def describe(expectation: tuple[str, str, str, str, bool], allowed: bool) -> str:
    verb, group, resource, sub = expectation[:4]
    what = f"{verb} {group or 'core'}/{resource}{'/' + sub if sub else ''}"
    return f"{what}: {'allowed' if allowed else 'denied'}, expected the opposite"


# --- tests ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render(DEPLOY)


@pytest.fixture(scope="module")
def cluster(kube_cluster: KubeCluster, rendered: list[dict[str, Any]]) -> KubeCluster:
    """The cluster with the CRDs deploy/ refers to and the RBAC objects applied
    for real (the authorizer reads stored roles); everything else is dry-run."""
    ensure_service_monitor_crd(kube_cluster)
    ensure_cert_manager_crds(kube_cluster.api_client())
    ensure_catalog_crds(kube_cluster)  # optional/crds: the catalog example's kinds
    extra = []
    if TOKENREVIEW_BINDING.exists():
        extra = list(yaml.safe_load_all(TOKENREVIEW_BINDING.read_text(encoding="utf-8")))
    for obj in [*rendered, *extra]:
        if obj["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
            status, body = apply(kube_cluster, obj, dry_run=False)
            assert status in (200, 201), body
    return kube_cluster


def test_kustomize_output_is_what_deploy_lists(rendered: list[dict[str, Any]]) -> None:
    kinds = {obj["kind"] for obj in rendered}
    assert {"Namespace", "Deployment", "ClusterRole", "ServiceMonitor"} <= kinds
    # The generator's content hash is in the name the Deployment mounts.
    (catalog,) = [o for o in rendered if o["metadata"]["name"].startswith("hapi-grpc-catalog-")]
    (deployment,) = [o for o in rendered if o["kind"] == "Deployment"]
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert catalog["metadata"]["name"] in [v.get("configMap", {}).get("name") for v in volumes]


def test_every_object_is_accepted_by_a_server_side_dry_run(
    cluster: KubeCluster, rendered: list[dict[str, Any]]
) -> None:
    objects = [*rendered, *optional_documents()]
    refused = {}
    for obj in objects:
        status, body = apply(cluster, obj, dry_run=True)
        label = f"{obj['kind']}/{obj['metadata']['name']}"
        if status not in (200, 201):
            refused[label] = body.get("message", body)
        else:
            assert (
                body["kind"] == obj["kind"] and body["metadata"]["name"] == obj["metadata"]["name"]
            )
    assert not refused, refused


def test_dry_run_refuses_a_broken_object(
    cluster: KubeCluster, rendered: list[dict[str, Any]]
) -> None:
    """The check has teeth: a field the API does not know, and a value its
    validation refuses (the server answers the first with 500, as it does for
    any apply body it cannot type)."""
    (shipped,) = [o for o in rendered if o["kind"] == "Deployment"]
    unknown = copy.deepcopy(shipped)
    unknown["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    status, body = apply(cluster, unknown, dry_run=True)
    assert status >= 400 and "readinessProbes: field not declared" in body["message"], body
    invalid = copy.deepcopy(shipped)
    invalid["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 70000
    status, body = apply(cluster, invalid, dry_run=True)
    assert status == 422 and "containerPort" in body["message"], body


def test_service_account_rights_are_exactly_the_table(cluster: KubeCluster) -> None:
    assert mismatches(cluster, ACCOUNT) == []


def test_a_rule_removed_from_the_role_is_caught(
    cluster: KubeCluster, rendered: list[dict[str, Any]]
) -> None:
    """The shipped role without its first rule (pods, nodes, ...), bound to
    another account: the table reports what went missing."""
    (role,) = copy.deepcopy(
        [
            o
            for o in rendered
            if o["kind"] == "ClusterRole" and o["metadata"]["name"] == INVESTIGATOR
        ]
    )
    (binding,) = copy.deepcopy(
        [
            o
            for o in rendered
            if o["kind"] == "ClusterRoleBinding" and o["roleRef"]["name"] == INVESTIGATOR
        ]
    )
    removed = role["rules"].pop(0)
    assert "pods" in removed["resources"]
    name = "hapi-grpc-investigator-without-pods"
    role["metadata"] = {"name": name}
    binding["metadata"] = {"name": name}
    binding["roleRef"]["name"] = name
    binding["subjects"] = [{"kind": "ServiceAccount", "name": name, "namespace": "hapi"}]
    for obj in (role, binding):
        status, body = apply(cluster, obj, dry_run=False)
        assert status in (200, 201), body
    wrong = mismatches(cluster, ("hapi", name))
    # The other account has only the reduced role: every allowed row that role
    # does not grant (the removed kinds, and what other bindings give the real
    # account, such as TokenReviews) must now be reported.
    lost = {
        describe(row, allowed=False)
        for row in EXPECTED
        if row[4] and not grants(role, row[0], row[1], f"{row[2]}/{row[3]}" if row[3] else row[2])
    }
    assert "get core/pods: denied, expected the opposite" in lost
    assert "get core/pods/log: denied, expected the opposite" in lost
    assert set(wrong) == lost


def grants(role: dict[str, Any], verb: str, group: str, resource: str) -> bool:
    """Whether one of the role's rules names this verb, group and resource."""
    return any(
        verb in rule.get("verbs", ())
        and group in rule.get("apiGroups", ())
        and resource in rule.get("resources", ())
        for rule in role["rules"]
    )


def test_kubernetes_client_reads_with_the_bound_token(cluster: KubeCluster) -> None:
    # Past the authorizer's word: a real token of the account lists pods.
    token = cluster.service_account_token(*ACCOUNT, create=False)
    core = kubernetes.client.CoreV1Api(cluster.api_client(token))
    assert core.list_namespaced_pod("hapi", _request_timeout=30).items == []
    with pytest.raises(kubernetes.client.ApiException) as refused:
        core.list_namespaced_secret("hapi", _request_timeout=30)
    assert refused.value.status == 403
