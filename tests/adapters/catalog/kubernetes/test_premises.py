"""The premise of a workflow read from the cluster's RemediationWorkflow resources,
through the real server: HAPI_CATALOG_SOURCE=kubernetes (the shipped CRDs, read with
the shipped read role), the real API server, Prometheus and a scripted model.

The resources carry an action type and parameters, never CEL: the action type's pack
decides. On one OOMKilled StatefulSet whose memory sits at a steady plateau:

- IncreaseMemoryLimits with a lower limit: review naming the pack's premise;
- IncreaseMemoryLimits with a higher limit: automated;
- an action type the service has no pack for: review naming "no premise"; automated
  only when the operator's policy names that type in `allow_unverified`;
- the operator's premises file (HAPI_PREMISES_FILE): a pack for that type decides it,
  and a premise added to one workflow refuses what the shipped pack allows.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import kubernetes
import pytest
import yaml

from hapi.v1 import analysis_pb2, service_pb2_grpc
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.app import build_server, open_toolsets
from hapi_grpc.config import Settings
from tests.adapters.catalog.kubernetes.conftest import open_catalog
from tests.domain.premises.test_premises_grpc import oomkilled_statefulset, plateau, request, script
from tests.fakes.kube_catalog import CatalogResources, parameter
from tests.fakes.kube_cluster import KubeCluster, ensure_namespace
from tests.fakes.kube_objects import ensure_node
from tests.fakes.kube_pytest import kubelet
from tests.fakes.kube_toolset import open_reader, toolset_source
from tests.fakes.kubelet import FakeKubelet
from tests.fakes.prometheus_server import PrometheusServer, start_prometheus
from tests.fakes.scripted_llm import ScriptedLLMServer

__all__ = ["kubelet"]

NOT_MET = analysis_pb2.HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET
TARGET = [
    parameter("TARGET_RESOURCE_NAMESPACE"),
    parameter("TARGET_RESOURCE_KIND"),
    parameter("TARGET_RESOURCE_NAME"),
]
MATCH_ANY = {
    "severity": ["critical", "high"],
    "environment": ["*"],
    "component": ["*"],
    "priority": "*",
}


@pytest.fixture(scope="module")
def world(
    catalog_cluster: KubeCluster, kubelet: FakeKubelet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, PrometheusServer]]:
    """One namespace holding the catalog's resources and the OOMKilled `ledger`
    StatefulSet, and Prometheus holding its container's level working set."""
    api = catalog_cluster.api_client()
    namespace = f"k-{secrets.token_hex(4)}"
    ensure_namespace(kubernetes.client.CoreV1Api(api), namespace)
    node = f"node-{secrets.token_hex(4)}"
    ensure_node(api, node, kubelet)
    oomkilled_statefulset(api, namespace, node)
    resources = CatalogResources(catalog_cluster, namespace)
    resources.action_type("increase-memory-limits", "IncreaseMemoryLimits")
    resources.action_type("restart-database", "RestartDatabase")
    resources.workflow(
        "raise-memory-v1",
        "IncreaseMemoryLimits",
        labels=MATCH_ANY,
        parameters=[*TARGET, parameter("MEMORY_LIMIT_NEW", pattern="^[0-9]+(Mi|Gi)$")],
    )
    resources.workflow(
        "restart-database-v1",
        "RestartDatabase",
        labels=MATCH_ANY,
        description={
            "what": "Restart the database's pods in order",
            "whenToUse": "The database is OOMKilled",
        },
        parameters=TARGET,
    )
    server = start_prometheus(
        tmp_path_factory.mktemp("prometheus"), lambda now: plateau(namespace, now)
    )
    try:
        yield namespace, server
    finally:
        server.stop()


# The operator's file: a pack for their own action type (the StatefulSet it restarts was
# read and is not failing for want of memory), and a cap on one workflow of a shipped type.
OPERATOR_PREMISES = """
packs:
  - action_type: RestartDatabase
    target: workload
    preconditions:
      - name: statefulset_read
        message: the database's StatefulSet was read
        expression: observed.workloads.exists(w, w.kind == "StatefulSet")
    invariants:
      - name: not_oomkilled
        message: a restart does not help a container killed for memory
        expression: >-
          !observed.pods.exists(p, p.workload.name == params.workload
          && p.containers.exists(c, c.last_termination.reason == "OOMKilled"))
workflows:
  - workflow_id: raise-memory-v1
    invariants:
      - name: at_most_1800mi
        message: the platform caps this workflow at 1800Mi
        expression: quantity(string(params.MEMORY_LIMIT_NEW)) <= quantity("1800Mi")
"""


def write_policy(directory: Path, policy: dict[str, Any]) -> str:
    path = directory / "policy.yaml"
    path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    return str(path)


def write_premises(directory: Path, text: str) -> str:
    path = directory / "premises.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


async def analyze(
    cluster: KubeCluster,
    kubeconfig: Path,
    world: tuple[str, PrometheusServer],
    workflow_id: str,
    extra: dict[str, str],
    tmp_path: Path,
    policy: dict[str, Any] | None = None,
    premises_file: str | None = None,
) -> Any:
    namespace, prometheus = world
    policy_file = None if policy is None else write_policy(tmp_path, policy)
    reader = await open_reader(cluster, tmp_path / "admin-kubeconfig")
    async with ScriptedLLMServer("openai", script(namespace, workflow_id, extra)) as model:
        config = Settings(
            grpc_host="127.0.0.1",
            grpc_port=0,
            metrics_port=-1,
            catalog_source="kubernetes",
            catalog_namespace=namespace,
            history_data_storage=False,
            prometheus_url=prometheus.url,
            policy_file=policy_file,
            premises_file=premises_file,
            kubernetes="off",  # the test's reader instead, over the same cluster
        )
        llm = OpenAICompatibleProvider(model.base_url, "gpt-test", "sk-test-0000000000")
        catalog = open_catalog(kubeconfig, namespace)
        opened = await open_toolsets(config)
        server = build_server(
            config, catalog=catalog, llm=llm, toolsets=[*opened.sources, toolset_source(reader)]
        )
        await server.start()
        try:
            await catalog.wait_synced()
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
                return (await stub.AnalyzeIncident(request(namespace), timeout=60)).result
        finally:
            await server.stop(0)
            await catalog.close()
            await opened.close()
            await llm.close()
            await reader.close()


async def test_a_lower_limit_goes_to_review_naming_the_premise(
    catalog_cluster: KubeCluster, kubeconfig: Path, world: Any, tmp_path: Path
) -> None:
    result = await analyze(
        catalog_cluster, kubeconfig, world, "raise-memory-v1", {"MEMORY_LIMIT_NEW": "1Gi"}, tmp_path
    )
    assert result.needs_human_review and result.human_review_reason == NOT_MET
    assert not result.HasField("selected_workflow")
    named = [w for w in result.warnings if "IncreaseMemoryLimits.memory_limit_raised" in w]
    assert named and "ledger limit 1536Mi" in named[0] and "proposed 1Gi" in named[0], list(
        result.warnings
    )


async def test_a_higher_limit_at_a_steady_plateau_is_automated(
    catalog_cluster: KubeCluster, kubeconfig: Path, world: Any, tmp_path: Path
) -> None:
    result = await analyze(
        catalog_cluster, kubeconfig, world, "raise-memory-v1", {"MEMORY_LIMIT_NEW": "2Gi"}, tmp_path
    )
    assert not result.needs_human_review, list(result.warnings)
    selected = result.selected_workflow
    assert (selected.workflow_id, selected.action_type) == (
        "raise-memory-v1",
        "IncreaseMemoryLimits",
    )
    assert selected.parameters["MEMORY_LIMIT_NEW"] == "2Gi"


async def test_an_unknown_action_type_goes_to_review_naming_no_premise(
    catalog_cluster: KubeCluster, kubeconfig: Path, world: Any, tmp_path: Path
) -> None:
    # A policy that allows another type unverified does not allow this one.
    allow_other = {"allow_unverified": {"action_types": ["FlushCache"]}}
    result = await analyze(
        catalog_cluster, kubeconfig, world, "restart-database-v1", {}, tmp_path, allow_other
    )
    assert result.needs_human_review and result.human_review_reason == NOT_MET
    assert not result.HasField("selected_workflow")
    expected = "no premise declared for action type 'RestartDatabase'"
    assert any(expected in w for w in result.warnings), list(result.warnings)


async def test_the_policy_allows_an_unknown_action_type_by_name(
    catalog_cluster: KubeCluster, kubeconfig: Path, world: Any, tmp_path: Path
) -> None:
    allow = {"allow_unverified": {"action_types": ["RestartDatabase"]}}
    result = await analyze(
        catalog_cluster, kubeconfig, world, "restart-database-v1", {}, tmp_path, allow
    )
    assert not result.needs_human_review, list(result.warnings)
    selected = result.selected_workflow
    assert (selected.workflow_id, selected.action_type) == (
        "restart-database-v1",
        "RestartDatabase",
    )


async def test_the_operators_pack_for_their_action_type_decides_it(
    catalog_cluster: KubeCluster, kubeconfig: Path, world: Any, tmp_path: Path
) -> None:
    premises = write_premises(tmp_path, OPERATOR_PREMISES)
    result = await analyze(
        catalog_cluster, kubeconfig, world, "restart-database-v1", {}, tmp_path, None, premises
    )
    # Verified now, and refuted: the StatefulSet's container was OOMKilled.
    assert result.needs_human_review and result.human_review_reason == NOT_MET
    assert not any("no premise declared" in w for w in result.warnings), list(result.warnings)
    assert any("RestartDatabase.not_oomkilled" in w for w in result.warnings), list(result.warnings)


async def test_the_operators_premise_on_one_workflow_adds_to_its_pack(
    catalog_cluster: KubeCluster, kubeconfig: Path, world: Any, tmp_path: Path
) -> None:
    premises = write_premises(tmp_path, OPERATOR_PREMISES)
    raise_to = {"MEMORY_LIMIT_NEW": "2Gi"}  # automated under the shipped pack alone
    result = await analyze(
        catalog_cluster, kubeconfig, world, "raise-memory-v1", raise_to, tmp_path, None, premises
    )
    assert result.needs_human_review and result.human_review_reason == NOT_MET
    assert any("at_most_1800mi" in w for w in result.warnings), list(result.warnings)
    within = {"MEMORY_LIMIT_NEW": "1792Mi"}
    result = await analyze(
        catalog_cluster, kubeconfig, world, "raise-memory-v1", within, tmp_path, None, premises
    )
    assert not result.needs_human_review, list(result.warnings)
    assert result.selected_workflow.parameters["MEMORY_LIMIT_NEW"] == "1792Mi"
