"""Each kubernetes tool end to end against the real kube-apiserver, and what reached it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes
import yaml

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.domain.result import ToolCallStatus
from hapi_grpc.domain.toolsets.jsontext import compact_json
from hapi_grpc.domain.toolsets.tool import ToolResult
from hapi_grpc.domain.toolsets.toolset import Toolset
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope
from tests.fakes import kube_fixtures
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kube_toolset import context, open_reader, toolset
from tests.fakes.kubelet import FakeKubelet

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


async def call(tools: Toolset, tool_name: str, **args: Any) -> ToolResult:
    tool = next(t for t in tools.tools if t.name == tool_name)
    return await tool.run(tool.arguments.model_validate(args), context())


def data(result: ToolResult) -> dict[str, Any]:
    assert result.status is ToolCallStatus.SUCCESS, result.payload
    return result.payload["cluster_data"]


async def test_get_pod_shows_last_termination_and_limit(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.oomkilled(kube_api, namespace, node_name, kubelet)
    pod = data(
        await call(toolset(reader), "kubernetes_get", kind="pods", namespace=namespace, name=s.pod)
    )
    (container,) = pod["containers"]
    assert container["last_termination"]["reason"] == "OOMKilled"
    assert container["last_termination"]["exit_code"] == 137
    assert container["limits"]["memory"] == "512Mi"
    assert container["restarts"] == 5
    assert pod["node"] == node_name and pod["phase"] == "Running"
    assert "managedFields" not in json.dumps(pod)


async def test_get_workload_node_and_custom_resource(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.oomkilled(kube_api, namespace, node_name, kubelet)
    tools = toolset(reader)
    deployment = data(
        await call(
            tools,
            "kubernetes_get",
            kind="apps/v1/Deployment",
            namespace=namespace,
            name=s.deployment,
        )
    )
    assert deployment["replicas"] == {
        "desired": 3,
        "current": 3,
        "ready": 2,
        "updated": 3,
        "available": 2,
        "unavailable": 1,
    }
    assert deployment["selector"] == "app=payment-api"
    assert deployment["strategy"]["type"] == "RollingUpdate"
    node = data(await call(tools, "kubernetes_get", kind="Node", name=node_name))
    assert node["ready"] == "True" and node["allocatable"]["memory"]
    # Created after discovery was read: an unknown kind reads discovery again.
    cert = kube_fixtures.certificate_not_ready(kube_api, namespace)
    certificate = data(
        await call(
            tools, "kubernetes_get", kind="Certificate", namespace=namespace, name="demo-app-cert"
        )
    )
    assert any(
        "Ready=False" in c and "letsencrypt-prod" in c for c in certificate["status"]["conditions"]
    )
    assert cert.target == f"{namespace}/cert-manager.io/Certificate/demo-app-cert"
    short = data(
        await call(tools, "kubernetes_get", kind="cert", namespace=namespace, name="demo-app-cert")
    )
    assert short["kind"] == "Certificate"


async def test_list_is_one_line_per_object_with_selector_and_limit(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.imagepullbackoff(kube_api, namespace, node_name, kubelet)
    tools = toolset(reader)
    listed = data(await call(tools, "kubernetes_list", kind="ReplicaSet", namespace=namespace))
    assert len(listed["items"]) == 2 and all(isinstance(i, str) for i in listed["items"])
    pods = data(
        await call(
            tools, "kubernetes_list", kind="Pod", namespace=namespace, label_selector="app=indexer"
        )
    )
    assert pods["items"][0].startswith(s.pod) and "ImagePullBackOff" in pods["items"][0]
    one = data(
        await call(tools, "kubernetes_list", kind="ReplicaSet", namespace=namespace, limit=1)
    )
    assert len(one["items"]) == 1 and "more" in one


async def test_events_fold_both_apis_newest_first(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.imagepullbackoff(kube_api, namespace, node_name, kubelet)
    events = data(
        await call(
            toolset(reader), "kubernetes_events", namespace=namespace, kind="Pod", name=s.pod
        )
    )["events"]
    by_message = {e["message"]: e for e in events}
    assert by_message["Error: ImagePullBackOff"]["count"] == 21
    # The events.k8s.io/v1 event is read once, though both APIs serve it.
    assert sum("unauthorized: authentication required" in m for m in by_message) == 1
    seconds = [e["last_seen"][:19] for e in events]
    assert seconds == sorted(seconds, reverse=True)


async def test_node_events_are_found_outside_the_signal_namespace(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
) -> None:
    kube_fixtures.nodenotready(kube_api, namespace, node_name)
    tools = toolset(reader)
    events = data(await call(tools, "kubernetes_events", kind="Node", name=node_name))["events"]
    assert events[0]["reason"] == "NodeNotReady"
    node = data(await call(tools, "kubernetes_get", kind="node", name=node_name))
    assert node["ready"] == "Unknown"
    assert "node.kubernetes.io/unreachable:NoExecute" in node["taints"]


async def test_previous_log_filter_and_redaction(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.crashloopbackoff(kube_api, namespace, node_name, kubelet)
    tools = toolset(reader)
    log = data(
        await call(tools, "kubernetes_pod_logs", namespace=namespace, pod=s.pod, previous=True)
    )
    assert log["lines"][-2:] == ["FATAL config key REDIS_URL missing", "exit status 1"]
    assert "eyJhbGciOiJIUzI1NiJ9" not in compact_json(log)
    assert any("[REDACTED]" in line for line in log["lines"])
    fatal = data(
        await call(
            tools,
            "kubernetes_pod_logs",
            namespace=namespace,
            pod=s.pod,
            container="cart-service",
            previous=True,
            filter="FATAL|exit",
            tail_lines=3,
        )
    )
    assert fatal["lines"] == ["FATAL config key REDIS_URL missing", "exit status 1"]
    asked = kubelet.requests_for(namespace, s.pod)[-1].query
    assert asked.get("previous") == "true" and asked.get("tailLines") == "3"


async def test_owner_chain_targets_the_deployment_and_reads_the_node(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.oomkilled(kube_api, namespace, node_name, kubelet)
    chain = data(
        await call(toolset(reader), "kubernetes_owner_chain", namespace=namespace, name=s.pod)
    )
    assert chain["remediation_target"] == s.target
    assert [c["ref"].split("/")[2] for c in chain["chain"]] == ["Pod", "ReplicaSet", "Deployment"]
    assert chain["node"]["ref"] == f"/core/Node/{node_name}"


async def test_owner_chain_reads_the_deployments_revisions_into_the_record(
    reader: ApiServerReader,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    """A rollback's premise compares revisions: the chain reads them, newest first."""
    from hapi_grpc.domain.observed import Observed
    from hapi_grpc.domain.toolsets.tool import ToolContext

    s = kube_fixtures.imagepullbackoff(kube_api, namespace, node_name, kubelet)
    tools = toolset(reader)
    tool = next(t for t in tools.tools if t.name == "kubernetes_owner_chain")
    observed = Observed()
    chain = data(
        await tool.run(
            tool.arguments.model_validate({"namespace": namespace, "name": s.pod}),
            ToolContext(5.0, observed),
        )
    )
    revisions = chain["revisions"]
    assert [line.split(":")[0] for line in revisions] == ["revision 7", "revision 6"]
    assert "indexer:2.13.2" in revisions[1]
    kept = {w["name"]: w for w in observed.activation()["workloads"] if w["kind"] == "ReplicaSet"}
    assert {w["revision"] for w in kept.values()} == {6, 7}
    deployment = next(w for w in observed.activation()["workloads"] if w["kind"] == "Deployment")
    # The old revision runs another template; the current one the Deployment's own.
    current = next(w for w in kept.values() if w["revision"] == 7)
    old = next(w for w in kept.values() if w["revision"] == 6)
    assert current["template_hash"] == deployment["template_hash"] != old["template_hash"]


async def test_no_secret_value_reaches_the_model(
    reader: ApiServerReader,
    kube_cluster: KubeCluster,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    s = kube_fixtures.crashloopbackoff(kube_api, namespace, node_name, kubelet)
    tools = toolset(reader)
    shown = []
    for args in (
        {"kind": "Pod", "name": s.pod},
        {"kind": "Deployment", "name": s.deployment},
        {"kind": "ReplicaSet", "name": s.replicaset},
    ):
        shown.append(
            compact_json((await call(tools, "kubernetes_get", namespace=namespace, **args)).payload)
        )
    text = "".join(shown)
    assert "REDIS_PASSWORD from secret cart-service-redis key password" in text
    assert "literal-token-do-not-leak" not in text and "redis-password-do-not-leak" not in text
    before = len(kube_cluster.audit_events())
    for spelling in (
        "secret",
        "secrets",
        "Secret",
        "v1/Secret",
        "core/v1/secrets",
        " SECRETS ",
        "secrets.v1",
    ):
        refused = await call(
            tools,
            "kubernetes_get",
            kind=spelling.strip(),
            namespace=namespace,
            name=s.extra["secret"],
        )
        assert refused.status is ToolCallStatus.INVALID_ARGUMENTS
        listed = await call(tools, "kubernetes_list", kind=spelling.strip(), namespace=namespace)
        assert listed.status is ToolCallStatus.INVALID_ARGUMENTS
    assert not [e for e in kube_cluster.audit_events()[before:] if "secrets" in e["requestURI"]]


async def test_scope_refusals_send_no_request(
    reader: ApiServerReader, kube_cluster: KubeCluster, namespace: str
) -> None:
    scope = KubernetesScope.of(allow=["k-*"], deny=[namespace], kinds=["Pod", "Deployment", "Node"])
    tools = toolset(reader, scope)

    def sent() -> list[str]:
        # The reader's requests (aiohttp's User-Agent), not the fixtures' (kubernetes client).
        events = kube_cluster.audit_events()
        return [e["requestURI"] for e in events if "aiohttp" in e.get("userAgent", "")]

    before = len(sent())
    for name, args in (
        ("kubernetes_get", {"kind": "Pod", "namespace": namespace, "name": "x"}),
        ("kubernetes_list", {"kind": "Pod", "namespace": "kube-system"}),
        ("kubernetes_events", {"namespace": namespace}),
        ("kubernetes_pod_logs", {"namespace": namespace, "pod": "x", "container": "c"}),
        ("kubernetes_owner_chain", {"namespace": "kube-system", "name": "x"}),
        ("kubernetes_get", {"kind": "ConfigMap", "namespace": "k-other", "name": "x"}),
    ):
        result = await call(tools, name, **args)
        assert result.status is ToolCallStatus.INVALID_ARGUMENTS, (name, result.payload)
        assert "scope" in result.payload["error"] or "excluded" in result.payload["error"]
    assert sent()[before:] == []


async def test_deploy_role_token_reads_with_get_only_and_gets_403_on_secrets(
    kube_cluster: KubeCluster,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
    tmp_path: Path,
) -> None:
    """The tools with exactly deploy/clusterrole.yaml's rights; the audit log shows what arrived."""
    s = kube_fixtures.crashloopbackoff(kube_api, namespace, node_name, kubelet)
    role = yaml.safe_load((DEPLOY / "clusterrole.yaml").read_text(encoding="utf-8"))
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube_api)
    try:
        rbac.create_cluster_role(role, _request_timeout=30)
    except kubernetes.client.ApiException as exc:
        assert exc.status == 409
    sa = f"reader-{namespace}"
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": sa},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role["metadata"]["name"],
            },
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
        },
        _request_timeout=30,
    )
    token = kube_cluster.service_account_token(namespace, sa)
    user = f"system:serviceaccount:{namespace}:{sa}"
    reader = await open_reader(kube_cluster, tmp_path / "kc", token)
    try:
        tools = toolset(reader)
        for name, args in (
            ("kubernetes_get", {"kind": "Pod", "namespace": namespace, "name": s.pod}),
            ("kubernetes_list", {"kind": "Pod", "namespace": namespace}),
            ("kubernetes_events", {"namespace": namespace, "kind": "Pod", "name": s.pod}),
            ("kubernetes_pod_logs", {"namespace": namespace, "pod": s.pod, "previous": True}),
            ("kubernetes_owner_chain", {"namespace": namespace, "name": s.pod}),
        ):
            assert (await call(tools, name, **args)).status is ToolCallStatus.SUCCESS, name
        refused = await call(tools, "kubernetes_get", kind="Secret", namespace=namespace, name="x")
        assert refused.status is ToolCallStatus.INVALID_ARGUMENTS
    finally:
        await reader.close()
    # A proxied log request is audited at ResponseStarted and ResponseComplete.
    events = list({e["auditID"]: e for e in kube_cluster.audit_events(user=user)}.values())
    assert {e["verb"] for e in events} <= {"get", "list"}
    uris = [e["requestURI"] for e in events]
    assert {e["user"]["username"] for e in events} == {user}
    assert any(u.startswith(f"/api/v1/namespaces/{namespace}/pods/{s.pod}/log?") for u in uris)
    assert not any("secrets" in u for u in uris)
    # The role itself: 403 on a Secret, even if a tool ever asked.
    status, _ = kube_cluster.request(
        "GET", f"/api/v1/namespaces/{namespace}/secrets/{s.extra['secret']}", token=token
    )
    assert status == 403
