"""A captured case holds only what the caller could read: the events tool lists a
Node's events in every namespace and drops those outside the caller's scope after
reading; the capture must not keep what was dropped. Through the real server,
authorized by the real API server, with `kube-*` denied by configuration; and a
node's stats summary (the real API server's node proxy to the test kubelet) and a
real Alertmanager's alerts, recorded for a caller confined to one namespace."""

from __future__ import annotations

import secrets
from pathlib import Path

import kubernetes
import yaml

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.capture.recorder import CaseRecorder
from hapi_grpc.config import Settings
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.tool import ToolContext
from hapi_grpc.toolsets.alertmanager.tools import AlertmanagerToolsetSource
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope
from hapi_grpc.toolsets.registry import open_toolsets
from tests.capture.test_outcomes import wait_for
from tests.capture.test_sources_and_bounds import written
from tests.fakes.alertmanager_server import AlertmanagerServer
from tests.fakes.kube_toolset import open_reader, toolset_source
from tests.fakes.kubelet import FakeKubelet
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server
from tests.security.kube_world import World, analyze, bearer, world
from tests.toolsets.kubernetes.test_node_stats import GIB, stats_node, summary
from tests.toolsets.prometheus.conftest import alertmanager

__all__ = ["alertmanager", "world"]


def _event(core: kubernetes.client.CoreV1Api, namespace: str, node: str, message: str) -> None:
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": f"{node}.{secrets.token_hex(4)}"},
            "involvedObject": {"kind": "Node", "name": node, "namespace": namespace},
            "reason": "NodeNotReady",
            "message": message,
            "type": "Warning",
        },
        _request_timeout=30,
    )


async def test_events_outside_the_callers_scope_never_reach_the_case(
    world: World, tmp_path: Path
) -> None:
    node = f"worker-{secrets.token_hex(3)}"
    core = kubernetes.client.CoreV1Api(world.cluster.api_client())
    _event(core, world.team_a, node, "seen from team a")
    _event(core, "kube-system", node, "kube-system detail")
    _event(core, world.team_b, node, "team b pod payments-7f9 evicted")
    root = tmp_path / "captured"
    reader = await open_reader(world.cluster, tmp_path / "kubeconfig")
    script = [Step.tool_calls([("kubernetes_events", {"kind": "Node", "name": node})])]
    script += [Step.text("{}")] * 4
    try:
        async with ScriptedLLMServer("openai", script) as model:
            llm = OpenAICompatibleProvider(model.base_url, "m", "sk-test-0000000000")
            try:
                async with running_server(
                    llm=llm,
                    toolsets=[toolset_source(reader, KubernetesScope.of(deny=["kube-*"]))],
                    capture_dir=str(root),
                    **world.settings(),
                ) as srv:
                    reply = await srv.stub.AnalyzeIncident(
                        analyze(world.team_a), metadata=bearer(world.caller_token), timeout=60
                    )
                    await wait_for(lambda: bool(written(root)))
            finally:
                await llm.close()
    finally:
        await reader.close()
    (events_call,) = [c for c in reply.result.tool_calls if c.name == "kubernetes_events"]
    assert "seen from team a" in events_call.result
    (case,) = written(root)
    text = (case / "cluster.yaml").read_text()
    events = [d for d in yaml.safe_load_all(text) if d and d.get("kind") == "Event"]
    assert [e["message"] for e in events] == ["seen from team a"]
    assert "kube-system" not in text and world.team_b not in text and "payments-7f9" not in text


async def test_a_node_summary_keeps_only_the_pods_the_caller_may_read(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    kubelet: FakeKubelet,
    node_name: str,
) -> None:
    stats_node(kube_api, kubelet, node_name)
    answered = summary(node_name, images=GIB, logs=GIB, empty_dir=GIB)
    (pod,) = answered["pods"]
    answered["pods"] = [
        {**pod, "podRef": {"name": f"p-{ns}", "namespace": ns}}
        for ns in ("team-a", "kube-system", "team-b")
    ]
    kubelet.set_stats_summary(node_name, answered)
    recorder = CaseRecorder()
    source = toolset_source(reader, KubernetesScope.of(deny=["kube-*"]))
    tools = source(Caller("bob", "team-a"), recorder)
    tool = next(t for t in tools.tools if t.name == "kubernetes_node_stats")
    await tool.run(tool.arguments.model_validate({"node": node_name}), ToolContext(5.0))
    kept = recorder.node_stats[node_name]["pods"]
    assert [p["podRef"]["namespace"] for p in kept] == ["team-a"]


async def test_alerts_of_other_namespaces_are_not_recorded(
    alertmanager: AlertmanagerServer,
) -> None:
    labels = {"alertname": "NodeDiskPressure", "node": "worker-9", "severity": "warning"}
    alertmanager.post_alerts(
        [{"labels": {**labels, "namespace": ns}} for ns in ("team-a", "team-b")]
        + [{"labels": labels}]  # of no namespace: the node's
    )
    opened = await open_toolsets(Settings(kubernetes="off", alertmanager_url=alertmanager.url))
    try:
        recorder = CaseRecorder()
        (source,) = [s for s in opened.sources if isinstance(s, AlertmanagerToolsetSource)]
        tools = source(Caller("bob", "team-a"), recorder)
        (tool,) = tools.tools
        args = tool.arguments.model_validate({"labels": {"alertname": "NodeDiskPressure"}})
        await tool.run(args, ToolContext(5.0))
    finally:
        await opened.close()
    kept = sorted(str(a["labels"].get("namespace")) for a in recorder.alerts)
    assert kept == ["None", "team-a"]
