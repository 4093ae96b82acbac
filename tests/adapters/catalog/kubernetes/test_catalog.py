"""HAPI_CATALOG_SOURCE=kubernetes against the real API server: what is offered
(Active workflows of Active action types), how a resource maps to the catalog
model, search over it, and every change while it serves (add, update, delete,
status changes, an action type going non-Active)."""

from __future__ import annotations

import logging
from pathlib import Path

import kubernetes
import pytest

from hapi_grpc.adapters.catalog.kubernetes import KubernetesCatalog
from hapi_grpc.domain.catalog import ParameterSpec, SearchFilters, SearchQuery
from hapi_grpc.domain.errors import WorkflowNotFoundError
from hapi_grpc.domain.workflow_validation import validate_workflow_parameters
from hapi_grpc.observability import metrics
from tests.adapters.catalog.kubernetes.conftest import open_catalog
from tests.fakes.kube_catalog import MEMORY_PARAMETERS, CatalogResources, eventually, parameter
from tests.fakes.kube_cluster import KubeCluster, ensure_namespace

RICH_PARAMETERS = [
    parameter("TARGET_RESOURCE_NAMESPACE", pattern="^[a-z0-9-]+$", description="Namespace"),
    parameter("MEMORY_LIMIT_NEW", pattern="^[0-9]+(Mi|Gi)$", description="New limit"),
    {"name": "REPLICAS", "type": "integer", "required": False, "minimum": 1, "maximum": 10,
     "default": 2, "description": "Replicas kept during the change"},
    {"name": "STRATEGY", "type": "string", "enum": ["Recreate", "RollingUpdate"],
     "default": "RollingUpdate"},
    {"name": "DRY_RUN", "type": "boolean", "default": False},
    {"name": "SURGE_RATIO", "type": "float", "minimum": 0.5, "maximum": 4.0,
     "dependsOn": ["REPLICAS"]},
]  # fmt: skip
OOM = SearchQuery(
    query="OOMKilled critical",
    filters=SearchFilters(severity="critical", component="deployment", environment="production"),
)


def offered(catalog: KubernetesCatalog, query: SearchQuery = OOM) -> object:
    async def ids() -> list[str]:
        return [hit.workflow_id for hit in (await catalog.search(query)).workflows]

    return ids


def gauge(state: str) -> float:
    return (
        metrics.registry.get_sample_value("hapi_catalog_kubernetes_workflows", {"state": state})
        or 0.0
    )


async def test_active_workflows_of_active_action_types_are_offered_as_read(
    resources: CatalogResources, catalog: KubernetesCatalog
) -> None:
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.action_type("restart-pod", "RestartPod", status="Disabled")
    resources.workflow(
        "raise-memory",
        "IncreaseMemoryLimits",
        parameters=RICH_PARAMETERS,
        customLabels={"team": "payments"},
        detectedLabels={"gitOpsManaged": False},
    )
    resources.workflow("raise-memory-pending", "IncreaseMemoryLimits", status="Pending")
    resources.workflow("raise-memory-unregistered", "IncreaseMemoryLimits", status=None)
    resources.workflow("restart-pods", "RestartPod")  # its action type is Disabled
    resources.workflow("scale-out", "ScaleReplicas")  # no ActionType of that name at all
    await catalog.wait_synced()

    result = await catalog.search(OOM)
    (hit,) = result.workflows
    assert (hit.workflow_id, hit.version, hit.action_type) == (
        "raise-memory",
        "1.0.0",
        "IncreaseMemoryLimits",
    )
    # What the model reads: what it does as the title; when to use it, and when not.
    assert hit.title == "Raise the memory limit of a Deployment's container"
    assert hit.description == (
        "Use when: The container is OOMKilled at a steady working set"
        " Not when: Usage grows without bound between restarts (a leak)"
    )
    for absent in (
        "raise-memory-pending",
        "raise-memory-unregistered",
        "restart-pods",
        "scale-out",
    ):
        with pytest.raises(WorkflowNotFoundError):
            await catalog.get_schema(absent)
    assert (gauge("offered"), gauge("inactive")) == (1, 4)

    schema = await catalog.get_schema("raise-memory")
    assert schema.action_type == "IncreaseMemoryLimits" and schema.version == "1.0.0"
    by_name = {spec.name: spec for spec in schema.parameters}
    assert by_name["TARGET_RESOURCE_NAMESPACE"] == ParameterSpec(
        name="TARGET_RESOURCE_NAMESPACE", type="string", required=True,
        description="Namespace", pattern="^[a-z0-9-]+$",
    )  # fmt: skip
    replicas = by_name["REPLICAS"]
    assert (replicas.type, replicas.minimum, replicas.maximum, replicas.default) == (
        "integer", 1, 10, 2,
    )  # fmt: skip
    assert by_name["STRATEGY"].enum == ("Recreate", "RollingUpdate")
    assert by_name["DRY_RUN"].default is False and by_name["DRY_RUN"].type == "boolean"
    assert by_name["SURGE_RATIO"].depends_on == ("REPLICAS",)
    record = await catalog.get_workflow("raise-memory")
    assert record.labels.custom_labels == {"team": ("payments",)}
    assert record.labels.detected_labels == {"gitOpsManaged": False}

    # The schema is the one parameters are validated against.
    _, good = await validate_workflow_parameters(
        catalog,
        "raise-memory",
        {"TARGET_RESOURCE_NAMESPACE": "payments", "MEMORY_LIMIT_NEW": "1Gi", "REPLICAS": 3},
    )
    assert good.valid, good.errors
    _, bad = await validate_workflow_parameters(
        catalog,
        "raise-memory",
        {"TARGET_RESOURCE_NAMESPACE": "payments", "MEMORY_LIMIT_NEW": "lots", "REPLICAS": 30,
         "SURGE_RATIO": 1.0},
    )  # fmt: skip
    assert {(e.parameter, e.code.value) for e in bad.errors} >= {
        ("MEMORY_LIMIT_NEW", "PATTERN_MISMATCH"),
        ("REPLICAS", "ABOVE_MAXIMUM"),
    }


async def test_search_matches_what_and_when_to_use_and_the_labels_lists(
    resources: CatalogResources, catalog: KubernetesCatalog
) -> None:
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    await catalog.wait_synced()

    async def hits(text: str, **filters: str) -> list[str]:
        query = SearchQuery(query=text, filters=SearchFilters(**filters))
        return [hit.workflow_id for hit in (await catalog.search(query)).workflows]

    assert await hits("OOMKilled critical") == ["raise-memory"]
    # The action type is a category a query can name, as a signal type is.
    (named,) = (await catalog.search(SearchQuery(query="IncreaseMemoryLimits"))).workflows
    assert named.confidence >= 0.85
    # Words only in "when not to use" never bring the workflow back.
    assert await hits("leak grows without bound between restarts") == []
    # Labels are lists: any listed severity; a GVK component matches its Kind too.
    assert await hits("OOMKilled", severity="high") == ["raise-memory"]
    assert await hits("OOMKilled", severity="low") == []
    assert await hits("OOMKilled", component="apps/v1/Deployment") == ["raise-memory"]
    assert await hits("OOMKilled", component="statefulset") == []
    assert await hits("OOMKilled", environment="staging", priority="P1") == ["raise-memory"]


async def test_changes_are_served_while_the_catalog_serves(
    resources: CatalogResources, catalog: KubernetesCatalog
) -> None:
    await catalog.wait_synced()
    assert await offered(catalog)() == []

    # Added.
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    await eventually(lambda: _ids_are(catalog, ["raise-memory"]))

    # Updated: a new version with one more parameter.
    resources.patch(
        "remediationworkflows",
        "raise-memory",
        {"spec": {"version": "1.1.0", "parameters": [*_memory(), parameter("CONTAINER_NAME")]}},
    )

    async def updated() -> bool:
        schema = await catalog.get_schema("raise-memory")
        return schema.version == "1.1.0" and "CONTAINER_NAME" in {p.name for p in schema.parameters}

    await eventually(updated)

    # Status: Active -> Disabled removes it, Active again brings it back.
    resources.set_status("remediationworkflows", "raise-memory", "Disabled")
    await eventually(lambda: _ids_are(catalog, []))
    resources.set_status("remediationworkflows", "raise-memory", "Active")
    await eventually(lambda: _ids_are(catalog, ["raise-memory"]))

    # The action type going non-Active removes every workflow of the type.
    resources.workflow("raise-memory-helm", "IncreaseMemoryLimits")
    await eventually(lambda: _ids_are(catalog, ["raise-memory", "raise-memory-helm"]))
    resources.set_status("actiontypes", "increase-memory-limits", "Deprecated")
    await eventually(lambda: _ids_are(catalog, []))
    resources.set_status("actiontypes", "increase-memory-limits", "Active")
    await eventually(lambda: _ids_are(catalog, ["raise-memory", "raise-memory-helm"]))
    # A second ActionType of the same name that is not Active: not offered either.
    resources.action_type("increase-memory-limits-old", "IncreaseMemoryLimits", "Superseded")
    await eventually(lambda: _ids_are(catalog, []))
    resources.delete("actiontypes", "increase-memory-limits-old")
    await eventually(lambda: _ids_are(catalog, ["raise-memory", "raise-memory-helm"]))

    # Deleted: the workflow, then the action type (and with it the other workflow).
    resources.delete("remediationworkflows", "raise-memory")
    await eventually(lambda: _ids_are(catalog, ["raise-memory-helm"]))
    with pytest.raises(WorkflowNotFoundError):
        await catalog.get_workflow("raise-memory")
    resources.delete("actiontypes", "increase-memory-limits")
    await eventually(lambda: _ids_are(catalog, []))


async def test_resources_the_catalog_cannot_use_are_left_out_and_named(
    resources: CatalogResources, catalog: KubernetesCatalog, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hapi_grpc.adapters.catalog.kubernetes")
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.workflow("raise-memory", "IncreaseMemoryLimits")
    # A back-reference RE2 cannot run; a default its own pattern refuses; an id
    # longer than a catalog id may be (Kubernetes names go to 253).
    resources.workflow(
        "backreference", "IncreaseMemoryLimits",
        parameters=[parameter("MEMORY_LIMIT_NEW", pattern="^(a)\\1$")],
    )  # fmt: skip
    resources.workflow(
        "bad-default", "IncreaseMemoryLimits",
        parameters=[parameter("MEMORY_LIMIT_NEW", pattern="^[0-9]+Mi$", default="1Gi")],
    )  # fmt: skip
    long_name = "w" * 140
    resources.workflow(long_name, "IncreaseMemoryLimits")
    await catalog.wait_synced()

    assert await offered(catalog)() == ["raise-memory"]
    assert gauge("invalid") == 3
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "backreference left out" in logged and "not a valid RE2 expression" in logged
    assert "bad-default left out" in logged and "does not match pattern" in logged
    assert f"{long_name} left out" in logged and "not a safe identifier" in logged


async def test_the_same_workflow_id_in_two_namespaces_is_offered_from_neither(
    catalog_cluster: KubeCluster,
    kubeconfig: Path,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="hapi_grpc.adapters.catalog.kubernetes")
    other = f"{namespace}-b"
    ensure_namespace(kubernetes.client.CoreV1Api(catalog_cluster.api_client()), other)
    for where in (namespace, other):
        here = CatalogResources(catalog_cluster, where)
        here.action_type("increase-memory-limits", "IncreaseMemoryLimits")
        here.workflow("raise-memory", "IncreaseMemoryLimits")
    catalog = open_catalog(kubeconfig, "")  # every namespace
    try:
        await catalog.wait_synced()
        with pytest.raises(WorkflowNotFoundError):
            await catalog.get_schema("raise-memory")
    finally:
        await catalog.close()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for where in (namespace, other):
        assert f"{where}/raise-memory left out: its id is used in another namespace" in logged


def _memory() -> list[dict[str, object]]:
    return list(MEMORY_PARAMETERS)


async def _ids_are(catalog: KubernetesCatalog, expected: list[str]) -> bool:
    return sorted(hit.workflow_id for hit in (await catalog.search(OOM)).workflows) == expected
