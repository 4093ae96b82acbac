"""Through the real server, API server and Prometheus, on a catalog as real ones are: an
action type and parameters, no CEL. The action type's premise pack decides.

The catalog is served by the Data Storage double over its REST contract (so the action
type travels as Data Storage sends it). A scripted model reads what a model would (the
Pod, its owner chain, the container's memory over the last hour) and proposes:

- IncreaseMemoryLimits with a lower limit: review naming the pack's premise;
- the same workflow with a higher limit, for a container genuinely OOMKilled at a
  steady plateau: automated, and the result names the action type;
- a workflow of an action type the service has no pack for: review naming "no premise".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import kubernetes
import pytest
from aiohttp import web

from hapi.v1 import analysis_pb2, service_pb2, service_pb2_grpc
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.datastorage_server import create_app
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.app import build_server
from hapi_grpc.client import load_analyze_request
from hapi_grpc.config import Settings
from hapi_grpc.domain.catalog import Workflow
from hapi_grpc.toolsets.registry import open_toolsets
from tests.fakes.kube_objects import MERGE, TIMEOUT, container_status, ensure_node
from tests.fakes.kube_toolset import toolset_source
from tests.fakes.kubelet import FakeKubelet
from tests.fakes.prometheus_server import PrometheusServer, start_prometheus
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, StepLike

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NOT_MET = analysis_pb2.HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET
LIMIT = "1536Mi"
STEP, WINDOW = 30, 3600
PLATEAU = 1_480_000_000  # bytes: level, just under the 1536Mi limit

PARAMETERS = [
    {"name": "TARGET_RESOURCE_NAMESPACE", "type": "string", "required": True},
    {"name": "TARGET_RESOURCE_KIND", "type": "string", "required": True},
    {"name": "TARGET_RESOURCE_NAME", "type": "string", "required": True},
]
CATALOG = [
    Workflow.model_validate(w)
    for w in (
        {
            "workflow_id": "raise-memory-v1",
            "version": "1.0.0",
            "action_type": "IncreaseMemoryLimits",
            "title": "Raise the memory limit of a workload's containers",
            "description": "Patches the workload's memory limit.",
            "signal_type": "OOMKilled",
            "labels": {"signal_type": "OOMKilled"},
            "parameters": [
                *PARAMETERS,
                {
                    "name": "MEMORY_LIMIT_NEW",
                    "type": "string",
                    "required": True,
                    "pattern": "^[0-9]+(Mi|Gi)$",
                },
            ],
        },
        {
            "workflow_id": "restart-database-v1",
            "version": "1.0.0",
            "action_type": "RestartDatabase",
            "title": "Restart the database",
            "description": "Restarts the database's pods in order.",
            "signal_type": "OOMKilled",
            "labels": {"signal_type": "OOMKilled"},
            "parameters": PARAMETERS,
        },
    )
]


def plateau(namespace: str, now: int) -> str:
    """The container's working set, level for the last hour (OpenMetrics)."""
    labels = f'namespace="{namespace}",pod="ledger-0",container="ledger"'
    lines = ["# TYPE container_memory_working_set_bytes gauge"]
    for t in range(now - WINDOW, now + 1, STEP):
        value = PLATEAU + (t // STEP % 2) * 1000  # a few kB of noise, no trend
        lines.append(f"container_memory_working_set_bytes{{{labels}}} {value} {t}")
    return "\n".join([*lines, "# EOF"]) + "\n"


@pytest.fixture
def prometheus(tmp_path: Path, namespace: str) -> Iterator[PrometheusServer]:
    server = start_prometheus(tmp_path, partial(plateau, namespace))
    try:
        yield server
    finally:
        server.stop()


def oomkilled_statefulset(api: kubernetes.client.ApiClient, namespace: str, node: str) -> None:
    """ledger: a StatefulSet whose container is OOMKilled at its 1536Mi limit, again."""
    container = {
        "name": "ledger",
        "image": "registry.example.com/ledger:4.2",
        "resources": {"limits": {"memory": LIMIT}, "requests": {"memory": LIMIT}},
    }
    labels = {"app": "ledger"}
    apps = kubernetes.client.AppsV1Api(api)
    sts = apps.create_namespaced_stateful_set(
        namespace,
        {
            "metadata": {"name": "ledger", "labels": labels},
            "spec": {
                "replicas": 1,
                "serviceName": "ledger",
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        _request_timeout=TIMEOUT,
    )
    owner = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "ledger",
        "uid": sts.metadata.uid,
        "controller": True,
    }
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "ledger-0", "labels": labels, "ownerReferences": [owner]},
            "spec": {"nodeName": node, "containers": [container]},
        },
        _request_timeout=TIMEOUT,
    )
    killed = {"terminated": {"reason": "OOMKilled", "exitCode": 137}}
    waiting = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}}
    status = container_status(container, ready=False, restarts=6, state=waiting, last=killed)
    core.patch_namespaced_pod_status(
        "ledger-0",
        namespace,
        {"status": {"phase": "Running", "containerStatuses": [status]}},
        _content_type=MERGE,
        _request_timeout=TIMEOUT,
    )


def request(namespace: str) -> service_pb2.AnalyzeIncidentRequest:
    req = load_analyze_request(EXAMPLES / "oomkilled.json")
    req.incident.signal.namespace = namespace
    req.incident.signal.resource_kind = "Pod"
    req.incident.signal.resource_name = "ledger-0"
    return req


def script(namespace: str, workflow_id: str, extra: dict[str, str]) -> list[StepLike]:
    pod = {"kind": "Pod", "namespace": namespace, "name": "ledger-0"}
    memory = (
        f'container_memory_working_set_bytes{{namespace="{namespace}",pod="ledger-0",'
        'container="ledger"}'
    )
    proposal = Step.text(
        json.dumps(
            {
                "analysis_summary": "ledger-0 is OOMKilled at its limit",
                "root_cause_assessment": "the container needs more memory",
                "rca_severity": "high",
                "selected_workflow": {
                    "workflow_id": workflow_id,
                    "version": "1.0.0",
                    "confidence": 0.9,
                    "rationale": "fits",
                    "estimated_risk": "low",
                    "parameters": {
                        "TARGET_RESOURCE_NAMESPACE": namespace,
                        "TARGET_RESOURCE_KIND": "StatefulSet",
                        "TARGET_RESOURCE_NAME": "ledger",
                        **extra,
                    },
                },
                "alternative_workflows": [],
                "warnings": [],
            }
        )
    )
    return [
        Step.tool_calls([("kubernetes_get", pod)]),
        Step.tool_calls([("kubernetes_owner_chain", pod)]),
        Step.tool_calls([("prometheus_query_range", {"query": memory, "range": "1h"})]),
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled high"})]),
        *[proposal] * 4,  # insists after every rejection
    ]


@asynccontextmanager
async def data_storage() -> AsyncIterator[str]:
    """The Data Storage double serving the declaration-free catalog."""
    runner = web.AppRunner(create_app(EmbeddedCatalog(CATALOG)), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def analyze(
    reader: ApiServerReader, prometheus: PrometheusServer, namespace: str, steps: list[StepLike]
) -> Any:
    async with data_storage() as url, ScriptedLLMServer("openai", steps) as model:
        config = Settings(
            grpc_host="127.0.0.1",
            grpc_port=0,
            metrics_port=-1,
            data_storage_url=url,
            history_data_storage=False,
            prometheus_url=prometheus.url,
            kubernetes="off",  # the test's own reader instead
        )
        llm = OpenAICompatibleProvider(model.base_url, "gpt-test", "sk-test-0000000000")
        opened = await open_toolsets(config)
        server = build_server(config, llm=llm, toolsets=[*opened.sources, toolset_source(reader)])
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
                return (await stub.AnalyzeIncident(request(namespace), timeout=60)).result
        finally:
            await server.stop(0)
            await opened.close()
            await llm.close()


async def test_a_lower_limit_goes_to_review_naming_the_premise(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
    prometheus: PrometheusServer,
) -> None:
    ensure_node(kube_api, node_name, kubelet)
    oomkilled_statefulset(kube_api, namespace, node_name)
    steps = script(namespace, "raise-memory-v1", {"MEMORY_LIMIT_NEW": "1Gi"})
    result = await analyze(reader, prometheus, namespace, steps)
    assert result.needs_human_review and result.human_review_reason == NOT_MET
    assert not result.HasField("selected_workflow")
    named = [w for w in result.warnings if "IncreaseMemoryLimits.memory_limit_raised" in w]
    assert named and "ledger limit 1536Mi" in named[0] and "proposed 1Gi" in named[0]
    assert [a.action_type for a in result.alternative_workflows] == ["IncreaseMemoryLimits"]


async def test_a_higher_limit_at_a_steady_plateau_is_automated(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
    prometheus: PrometheusServer,
) -> None:
    ensure_node(kube_api, node_name, kubelet)
    oomkilled_statefulset(kube_api, namespace, node_name)
    steps = script(namespace, "raise-memory-v1", {"MEMORY_LIMIT_NEW": "2Gi"})
    result = await analyze(reader, prometheus, namespace, steps)
    assert not result.needs_human_review, list(result.warnings)
    selected = result.selected_workflow
    assert selected.workflow_id == "raise-memory-v1"
    assert selected.action_type == "IncreaseMemoryLimits"
    assert selected.parameters["MEMORY_LIMIT_NEW"] == "2Gi"
    # The plateau was read, not assumed: the series is in what the model was shown.
    ranged = [c for c in result.tool_calls if c.name == "prometheus_query_range"]
    assert ranged and '"direction":"flat"' in ranged[0].result.replace(" ", "")


async def test_an_action_type_without_a_pack_goes_to_review_naming_no_premise(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
    prometheus: PrometheusServer,
) -> None:
    ensure_node(kube_api, node_name, kubelet)
    oomkilled_statefulset(kube_api, namespace, node_name)
    steps = script(namespace, "restart-database-v1", {})
    result = await analyze(reader, prometheus, namespace, steps)
    assert result.needs_human_review and result.human_review_reason == NOT_MET
    expected = "no premise declared for action type 'RestartDatabase'"
    assert any(expected in w for w in result.warnings), list(result.warnings)
