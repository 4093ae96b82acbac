"""Case objects of any kind the test API server serves, loaded and removed for real.

The kinds are resolved through discovery, created in the order the API server
requires (the file lists them in the opposite order on purpose), their status
written through the status subresource, and everything deleted afterwards. A
kind nobody serves is a `CaseError` naming the file and the kind; a refused
create names the case, the object and the API server's message.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.harness import cli
from evals.harness.cases import CASES_DIR, check_kinds, load_cases
from evals.harness.cluster_state import ClusterLoader, ClusterStateError
from evals.harness.kinds import KindIndex, kube_fetch
from hapi_grpc.cases.case import CaseError, load_case
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kube_pytest import kube_cluster, kubelet
from tests.fakes.kubelet import FakeKubelet

__all__ = ["kube_cluster", "kubelet"]

pytestmark = pytest.mark.timeout(180)


def write_case(root: Path, name: str, objects: list[dict[str, Any]]) -> Path:
    """A copy of a shipped case with these cluster objects."""
    directory = root / name
    shutil.copytree(CASES_DIR / "oomkilled-raise-limit", directory)
    shutil.rmtree(directory / "logs")
    (directory / "cluster.yaml").write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    return directory


@pytest.fixture
def index(kube_cluster: KubeCluster) -> KindIndex:
    fetch = kube_fetch(kube_cluster.url, kube_cluster.admin_token, kube_cluster.ssl_context())
    return KindIndex(fetch)


@pytest.fixture
def loader(kube_cluster: KubeCluster, kubelet: FakeKubelet, index: KindIndex) -> ClusterLoader:
    return ClusterLoader(kube_cluster.request, kubelet.port, index)


def get(kube: KubeCluster, path: str) -> tuple[int, dict[str, Any]]:
    status, data = kube.request("GET", path)
    return status, json.loads(data) if data else {}


def every_kind(ns: str, tag: str) -> list[dict[str, Any]]:
    """One incident's objects, listed dependents first (the loader reorders them)."""
    pod_spec = {"containers": [{"name": "app", "image": "registry.example.com/app:1"}]}
    bounded = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}
    return [
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"quota-{tag}", "namespace": ns},
            "involvedObject": {"kind": "ResourceQuota", "name": "compute"},
            "reason": "FailedCreate",
            "message": "exceeded quota: compute",
            "type": "Warning",
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute", "namespace": ns},
            "spec": {"hard": {"pods": "2"}},
            "status": {"hard": {"pods": "2"}, "used": {"pods": "2"}},
        },
        {
            "apiVersion": "example.com/v1",
            "kind": f"Widget{tag}",
            "metadata": {"name": "w", "namespace": ns},
            "spec": {"size": 3},
            "status": {"phase": "Stuck"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "batch-0", "namespace": ns},
            "spec": {**pod_spec, "priorityClassName": f"batch-{tag}"},
            "status": {"phase": "Running"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "at-the-maximum", "namespace": ns},
            "spec": {"containers": [{**pod_spec["containers"][0], "resources": bounded}]},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": ns},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": f"fixed-{tag}",
                "resources": {"requests": {"storage": "10Gi"}},
                "volumeName": f"pv-{tag}",
            },
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}},
        },
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": f"node-{tag}", "namespace": "kube-node-lease"},
            "spec": {
                "holderIdentity": f"node-{tag}",
                "leaseDurationSeconds": 40,
                "renewTime": "2026-11-25T18:00:00.000000Z",
            },
        },
        {
            "kind": "Secret",  # no apiVersion: the preferred version is found
            "metadata": {"name": "db-credentials", "namespace": ns},
            "type": "Opaque",
            "data": {"password": base64.b64encode(b"not-shown").decode()},
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "bounds", "namespace": ns},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "max": {"cpu": "1", "memory": "1Gi"},
                        "default": {"cpu": "500m", "memory": "256Mi"},
                        "defaultRequest": {"cpu": "250m", "memory": "128Mi"},
                    }
                ]
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"pv-{tag}"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": f"fixed-{tag}",
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{tag}"},
                "claimRef": {"namespace": ns, "name": "data"},
            },
            "status": {"phase": "Bound"},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": f"fixed-{tag}"},
            "provisioner": "ebs.csi.aws.com",
            "allowVolumeExpansion": False,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"batch-{tag}"},
            "value": 1000,
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widget{tag}s.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": f"widget{tag}s", "kind": f"Widget{tag}"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        },
    ]


@pytest.fixture
def tag() -> str:
    return secrets.token_hex(3)


def test_every_kind_loads_in_dependency_order_and_unloads(
    tmp_path: Path, kube_cluster: KubeCluster, loader: ClusterLoader, tag: str
) -> None:
    ns = f"e-{tag}"
    case = load_case(write_case(tmp_path, "every-kind", every_kind(ns, tag)))
    check_kinds(case, loader.index)
    state = loader.load(case)
    try:
        # Priority admission resolved the class, so it existed before the Pod.
        _, pod = get(kube_cluster, f"/api/v1/namespaces/{ns}/pods/batch-0")
        assert pod["spec"]["priority"] == 1000 and pod["status"]["phase"] == "Running"
        # LimitRange admission defaulted the Pod created after it.
        container = pod["spec"]["containers"][0]
        assert container["resources"]["limits"] == {"cpu": "500m", "memory": "256Mi"}
        # Status went through the status subresource (a create drops it).
        _, volume = get(kube_cluster, f"/api/v1/persistentvolumes/pv-{tag}")
        assert volume["status"]["phase"] == "Bound"
        _, widget = get(kube_cluster, f"/apis/example.com/v1/namespaces/{ns}/widget{tag}s/w")
        assert widget["status"] == {"phase": "Stuck"} and widget["spec"] == {"size": 3}
        _, quota = get(kube_cluster, f"/api/v1/namespaces/{ns}/resourcequotas/compute")
        assert quota["status"]["used"] == {"pods": "2"}
        # The quota admitted the case's two Pods and refuses a third, as it would have.
        body = {
            "metadata": {"name": "third"},
            "spec": {"containers": [{"name": "a", "image": "b"}]},
        }
        status, data = kube_cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", body=body)
        assert status == 403 and b"exceeded quota: compute" in data
        _, sc = get(kube_cluster, f"/apis/storage.k8s.io/v1/storageclasses/fixed-{tag}")
        assert sc["allowVolumeExpansion"] is False
        _, lease = get(
            kube_cluster,
            f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-{tag}",
        )
        assert lease["spec"]["holderIdentity"] == f"node-{tag}"
        status, _ = get(kube_cluster, f"/api/v1/namespaces/{ns}/secrets/db-credentials")
        assert status == 200
        _, event = get(kube_cluster, f"/api/v1/namespaces/{ns}/events/quota-{tag}")
        assert event["involvedObject"]["uid"] == quota["metadata"]["uid"]
    finally:
        paths = [path for _, path in state.created]
        loader.unload(state)
    assert len(paths) == 13  # the namespace of the Lease and the case are kept
    left = [p for p in paths if kube_cluster.request("GET", p)[0] != 404]
    assert left == []
    # The CRD is gone and the case loads again (the claim and volume did not linger).
    state = loader.load(case)
    loader.unload(state)


def test_a_kind_nobody_serves_is_a_case_error_naming_file_and_kind(
    tmp_path: Path, index: KindIndex
) -> None:
    objects = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}},
    ]
    directory = write_case(tmp_path / "cases", "unknown-kind", objects)
    load_case(directory)  # the file itself is well formed
    with pytest.raises(CaseError) as caught:
        load_cases(tmp_path / "cases", served=index)
    message = str(caught.value)
    assert str(directory / "cluster.yaml") in message and "example.com/v1 Gadget" in message
    # The same kind in a version the server does not serve, or a wrong group.
    objects[1] = {"apiVersion": "apps/v9", "kind": "Deployment", "metadata": {"name": "d"}}
    write_case(tmp_path / "other", "bad-version", objects)
    with pytest.raises(CaseError, match="apps/v9 Deployment"):
        load_cases(tmp_path / "other", served=index)


def test_malformed_kinds_are_refused_without_a_cluster(tmp_path: Path) -> None:
    bad = [{"apiVersion": "apps/v1/extra", "kind": "Deployment", "metadata": {"name": "d"}}]
    with pytest.raises(CaseError, match=r"cluster.yaml: document 0 \(Deployment\): apiVersion"):
        load_case(write_case(tmp_path, "bad-api-version", bad))
    lower = [{"apiVersion": "v1", "kind": "pod", "metadata": {"name": "p"}}]
    with pytest.raises(CaseError, match="kind 'pod' is not a Kubernetes kind"):
        load_case(write_case(tmp_path, "lower-kind", lower))


def test_a_refused_create_names_case_object_and_message_and_leaves_nothing(
    tmp_path: Path, kube_cluster: KubeCluster, loader: ClusterLoader, tag: str
) -> None:
    ns = f"r-{tag}"
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": ns}},
        {  # a Pod naming a PriorityClass the case does not define
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "orphan", "namespace": ns},
            "spec": {
                "priorityClassName": f"missing-{tag}",
                "containers": [{"name": "a", "image": "b"}],
            },
        },
    ]
    case = load_case(write_case(tmp_path, "refused", objects))
    check_kinds(case, loader.index)
    with pytest.raises(ClusterStateError) as caught:
        loader.load(case)
    message = str(caught.value)
    assert message.startswith(f"case refused: Pod {ns}/orphan: 403 ")
    assert f"no PriorityClass with name missing-{tag} was found" in message
    assert "Traceback" not in message and "b'" not in message
    assert get(kube_cluster, f"/api/v1/namespaces/{ns}/configmaps/cm")[0] == 404


def test_eval_stops_on_an_unknown_kind_naming_file_and_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = [{"apiVersion": "v1", "kind": "Gizmo", "metadata": {"name": "g"}}]
    directory = write_case(tmp_path / "cases", "gizmo", objects)
    code = cli.main(["--cases-dir", str(tmp_path / "cases"), "--quiet"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert f"{directory / 'cluster.yaml'}: document 0 (g)" in err and "v1 Gizmo" in err
    assert "Traceback" not in err
