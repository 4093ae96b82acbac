"""The deploy manifests as the tests read them: every document kustomize lists; the real
test cluster for the shipped roles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.adapters.catalog.kubernetes.conftest import catalog_cluster, resources
from tests.fakes.kube_pytest import kube_api, kube_cluster, kubelet, namespace, node_name

__all__ = [
    "catalog_cluster",
    "kube_api",
    "kube_cluster",
    "kubelet",
    "namespace",
    "node_name",
    "resources",
]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _documents() -> dict[tuple[str, str], dict[str, Any]]:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    found = {}
    for resource in kustomization["resources"]:
        for doc in yaml.safe_load_all((DEPLOY / resource).read_text(encoding="utf-8")):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


@pytest.fixture(scope="module")
def docs() -> dict[tuple[str, str], dict[str, Any]]:
    return _documents()


@pytest.fixture(scope="module")
def pod(docs: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    return docs[("Deployment", "hapi-grpc")]["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def container(pod: dict[str, Any]) -> dict[str, Any]:
    (only,) = pod["containers"]
    return only


@pytest.fixture(scope="module")
def settings_env(docs: dict[tuple[str, str], dict[str, Any]]) -> dict[str, str]:
    return docs[("ConfigMap", "hapi-grpc-settings")]["data"]
