"""The shipped read role of the catalog (deploy/optional/kubernetes-catalog-rbac.yaml)
as the API server's authorizer reads it: get, list and watch on the two kinds,
nothing else; and a real token of it cannot change a workflow."""

from __future__ import annotations

import pytest

from tests.deploy.test_apply import can
from tests.fakes.kube_catalog import GROUP_PATH, CatalogResources, reader_token
from tests.fakes.kube_cluster import KubeCluster

ACCOUNT = ("hapi-catalog-rbac", "reader")
ROWS = [
    *[(verb, "kubernaut.ai", kind, "", True) for verb in ("get", "list", "watch")
      for kind in ("remediationworkflows", "actiontypes")],
    *[(verb, "kubernaut.ai", kind, "", False)
      for verb in ("create", "update", "patch", "delete", "deletecollection")
      for kind in ("remediationworkflows", "actiontypes")],
    ("update", "kubernaut.ai", "remediationworkflows", "status", False),
    ("patch", "kubernaut.ai", "actiontypes", "status", False),
    ("watch", "", "pods", "", False),
    ("get", "", "secrets", "", False),
]  # fmt: skip


@pytest.fixture(scope="module")
def bound(catalog_cluster: KubeCluster) -> str:
    return reader_token(catalog_cluster, *ACCOUNT)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: "-".join(filter(None, row[:4])))
def test_the_read_role_grants_reads_of_the_catalog_only(
    catalog_cluster: KubeCluster, bound: str, row: tuple[str, str, str, str, bool]
) -> None:
    assert can(catalog_cluster, ACCOUNT, row) is row[4]


def test_its_token_cannot_change_a_workflow(
    catalog_cluster: KubeCluster, bound: str, resources: CatalogResources
) -> None:
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    path = f"{GROUP_PATH}/namespaces/{resources.namespace}/remediationworkflows/raise-memory"
    status, _ = catalog_cluster.request("GET", path, token=bound)
    assert status == 200
    status, _ = catalog_cluster.request(
        "PATCH", path + "/status", token=bound, body={"status": {"catalogStatus": "Active"}}
    )
    assert status == 403
