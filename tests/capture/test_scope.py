"""A captured case holds only what the caller could read: the events tool lists a
Node's events in every namespace and drops those outside the caller's scope after
reading; the capture must not keep what was dropped. Through the real server,
authorized by the real API server, with `kube-*` denied by configuration."""

from __future__ import annotations

import secrets
from pathlib import Path

import kubernetes
import yaml

from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope
from tests.capture.test_outcomes import wait_for
from tests.capture.test_sources_and_bounds import written
from tests.fakes.kube_toolset import open_reader, toolset_source
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server
from tests.security.kube_world import World, analyze, bearer, world

__all__ = ["world"]


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
