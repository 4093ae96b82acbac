"""Every incident fixture reads back from the real API server as built."""

from __future__ import annotations

import json

import kubernetes

from tests.fakes import kube_fixtures
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kubelet import FakeKubelet


def _owner(obj: object) -> tuple[str, str, str]:
    (ref,) = obj.metadata.owner_references  # type: ignore[attr-defined]
    assert ref.controller is True
    return ref.kind, ref.name, ref.uid


def test_oomkilled_pod_with_its_owner_chain(
    kube_api: kubernetes.client.ApiClient, namespace: str, node_name: str, kubelet: FakeKubelet
) -> None:
    scenario = kube_fixtures.oomkilled(kube_api, namespace, node_name, kubelet)
    core = kubernetes.client.CoreV1Api(kube_api)
    apps = kubernetes.client.AppsV1Api(kube_api)

    pod = core.read_namespaced_pod(scenario.pod, namespace, _request_timeout=30)
    (status,) = pod.status.container_statuses
    assert status.last_state.terminated.reason == "OOMKilled"
    assert status.last_state.terminated.exit_code == 137
    assert status.restart_count == 5
    assert status.state.running is not None
    assert pod.spec.containers[0].resources.limits["memory"] == "512Mi"
    assert pod.spec.node_name == node_name

    rs = apps.read_namespaced_replica_set(scenario.replicaset, namespace, _request_timeout=30)
    deployment = apps.read_namespaced_deployment(
        scenario.deployment, namespace, _request_timeout=30
    )
    assert _owner(pod) == ("ReplicaSet", rs.metadata.name, rs.metadata.uid)
    assert _owner(rs) == ("Deployment", "payment-api", deployment.metadata.uid)
    assert (deployment.status.replicas, deployment.status.ready_replicas) == (3, 2)
    assert scenario.target == f"{namespace}/apps/Deployment/payment-api"


def test_crashloopbackoff_pod_with_events_and_a_secret_reference(
    kube_api: kubernetes.client.ApiClient, namespace: str, node_name: str, kubelet: FakeKubelet
) -> None:
    scenario = kube_fixtures.crashloopbackoff(kube_api, namespace, node_name, kubelet)
    core = kubernetes.client.CoreV1Api(kube_api)
    pod = core.read_namespaced_pod(scenario.pod, namespace, _request_timeout=30)
    (status,) = pod.status.container_statuses
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert (status.last_state.terminated.reason, status.last_state.terminated.exit_code) == (
        "Error",
        1,
    )
    assert status.restart_count == 12
    env = {e.name: e for e in pod.spec.containers[0].env}
    assert env["REDIS_PASSWORD"].value_from.secret_key_ref.name == scenario.extra["secret"]

    events = core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={scenario.pod}", _request_timeout=30
    ).items
    backoff = next(e for e in events if e.reason == "BackOff")
    assert backoff.count == 47 and backoff.type == "Warning"
    assert backoff.involved_object.uid == pod.metadata.uid


def test_imagepullbackoff_events_through_both_event_apis(
    kube_cluster: KubeCluster,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
    node_name: str,
    kubelet: FakeKubelet,
) -> None:
    scenario = kube_fixtures.imagepullbackoff(kube_api, namespace, node_name, kubelet)
    core = kubernetes.client.CoreV1Api(kube_api)
    pod = core.read_namespaced_pod(scenario.pod, namespace, _request_timeout=30)
    assert pod.status.phase == "Pending"
    (status,) = pod.status.container_statuses
    assert status.state.waiting.reason == "ImagePullBackOff"
    assert scenario.extra["image"] in status.state.waiting.message

    selector = f"involvedObject.name={scenario.pod}"
    core_events = core.list_namespaced_event(
        namespace, field_selector=selector, _request_timeout=30
    ).items
    # Raw JSON: the official client's EventsV1Event model rejects the null
    # eventTime of events written through core/v1 (client 37.0.2).
    status, body = kube_cluster.request(
        "GET",
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        f"?fieldSelector=regarding.name%3D{scenario.pod}",
    )
    assert status == 200
    new_events = json.loads(body)["items"]
    assert len(core_events) == len(new_events) == 5
    notes = {e["note"] for e in new_events}
    assert any("unauthorized: authentication required" in n for n in notes)
    assert {e.message for e in core_events} == notes
    assert sum(e["eventTime"] is None for e in new_events) == 4  # written through core/v1

    apps = kubernetes.client.AppsV1Api(kube_api)
    revisions = {
        rs.metadata.name: rs.metadata.annotations["deployment.kubernetes.io/revision"]
        for rs in apps.list_namespaced_replica_set(namespace, label_selector="app=indexer").items
    }
    assert revisions == {scenario.replicaset: "7", scenario.extra["old_replicaset"]: "6"}


def test_nodenotready_node_conditions_taints_and_pods(
    kube_cluster: KubeCluster, kube_api: kubernetes.client.ApiClient, namespace: str, node_name: str
) -> None:
    scenario = kube_fixtures.nodenotready(kube_api, namespace, node_name)
    core = kubernetes.client.CoreV1Api(kube_api)
    node = core.read_node(node_name, _request_timeout=30)
    conditions = {c.type: c for c in node.status.conditions}
    assert conditions["Ready"].status == "Unknown"
    assert conditions["Ready"].reason == "NodeStatusUnknown"
    assert {t.effect for t in node.spec.taints} == {"NoSchedule", "NoExecute"}
    assert scenario.target == f"/core/Node/{node_name}"

    pods = core.list_pod_for_all_namespaces(
        field_selector=f"spec.nodeName={node_name}", _request_timeout=30
    ).items
    assert len(pods) == 2
    # Its kubelet is unreachable: the apiserver cannot fetch a log.
    status, _ = kube_cluster.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods/{pods[0].metadata.name}/log"
    )
    assert status >= 500


def test_certificate_not_ready_through_a_crd(
    kube_cluster: KubeCluster, kube_api: kubernetes.client.ApiClient, namespace: str
) -> None:
    scenario = kube_fixtures.certificate_not_ready(kube_api, namespace)
    status, body = kube_cluster.request("GET", "/apis/cert-manager.io/v1")
    assert status == 200
    served = {r["name"]: r["kind"] for r in json.loads(body)["resources"]}
    assert served["certificates"] == "Certificate"

    custom = kubernetes.client.CustomObjectsApi(kube_api)
    cert = custom.get_namespaced_custom_object(
        "cert-manager.io", "v1", namespace, "certificates", "demo-app-cert", _request_timeout=30
    )
    ready = next(c for c in cert["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    assert "letsencrypt-prod" in ready["message"]
    assert cert["spec"]["issuerRef"]["kind"] == "ClusterIssuer"
    request = custom.get_namespaced_custom_object(
        "cert-manager.io",
        "v1",
        namespace,
        "certificaterequests",
        scenario.extra["certificaterequest"],
        _request_timeout=30,
    )
    assert request["metadata"]["ownerReferences"][0]["uid"] == cert["metadata"]["uid"]
    assert scenario.target == f"{namespace}/cert-manager.io/Certificate/demo-app-cert"
