"""End to end over gRPC: the built-in analyst reads why a Pending Pod is not scheduled."""

from __future__ import annotations

from typing import Any

import kubernetes
from google.protobuf import json_format

from hapi.v1 import analysis_pb2, service_pb2
from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from tests.fakes import kube_fixtures
from tests.fakes.kube_cluster import KubeCluster
from tests.fakes.kube_objects import Scenario
from tests.fakes.kube_toolset import toolset_source
from tests.helpers.grpc_server import running_server

# What the bundled catalog may safely pick for a Pod no node can take: nothing
# there adds capacity, and restart-pod-v1 (recreate "on a healthy node") rests on
# a premise the scheduler just refuted. Only the read-only snapshot fits; a review
# may name that refuted premise (PRECONDITION_NOT_MET) or that nothing fits.
READ_ONLY = {"collect-cluster-diagnostics-v1"}
REVIEW_REASONS = {
    analysis_pb2.HUMAN_REVIEW_REASON_NO_MATCHING_WORKFLOWS,
    analysis_pb2.HUMAN_REVIEW_REASON_INVESTIGATION_INCONCLUSIVE,
    analysis_pb2.HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET,
}


def pending_request(s: Scenario) -> service_pb2.AnalyzeIncidentRequest:
    """The KubePodNotReady alert (a Pending Pod counts as not ready) about the Pod."""
    incident: dict[str, Any] = {
        "remediationId": "rr-2026-11-22-pending-5b1e",
        "incidentId": "fp-8a41c2d7",
        "signal": {
            "signalType": "KubePodNotReady",
            "severity": "SEVERITY_HIGH",
            "component": "pod",
            "alertName": "KubePodNotReady",
            "namespace": s.namespace,
            "resourceKind": "Pod",
            "resourceName": s.pod,
        },
        "errorDetails": {
            "errorMessage": f"Pod {s.namespace}/{s.pod} has been in a non-ready state for"
            " longer than 15 minutes",
            "description": 'kube_pod_status_phase{phase="Pending"} == 1 for 15m',
            "firingTime": "2026-11-22T09:30:00Z",
            "receivedTime": "2026-11-22T09:30:02Z",
        },
        "cluster": {
            "clusterName": "prod-eu-west-1",
            "signalSource": "prometheus-adapter",
            "signalLabels": {"pod": s.pod, "phase": "Pending"},
        },
        "business": {
            "environment": "production",
            "priority": "P2",
            "businessCategory": "reporting",
            "riskTolerance": "RISK_LEVEL_LOW",
        },
    }
    return json_format.ParseDict({"incident": incident}, service_pb2.AnalyzeIncidentRequest())


async def analyze(reader: ApiServerReader, s: Scenario) -> Any:
    async with running_server(toolsets=[toolset_source(reader)]) as srv:
        return (await srv.stub.AnalyzeIncident(pending_request(s), timeout=60)).result


def assert_deployment_and_safe(result: Any, s: Scenario) -> None:
    t = result.target_resource
    assert f"{t.namespace}/{t.api_group}/{t.kind}/{t.name}" == s.target  # not the Pod
    if result.HasField("selected_workflow"):
        assert result.selected_workflow.workflow_id in READ_ONLY, result.selected_workflow
        assert not result.needs_human_review
    else:
        assert result.needs_human_review
        assert result.human_review_reason in REVIEW_REASONS
    assert any("No language model was used" in w for w in result.warnings)


async def test_pending_pod_cites_failed_scheduling_and_targets_the_deployment(
    reader: ApiServerReader,
    kube_cluster: KubeCluster,
    kube_api: kubernetes.client.ApiClient,
    namespace: str,
) -> None:
    s = kube_fixtures.pending_unschedulable(kube_api, namespace)
    before = len(kube_cluster.audit_events(user="test-admin"))
    result = await analyze(reader, s)
    rca = result.root_cause_assessment
    assert f"Event on Pod {namespace}/{s.pod}: FailedScheduling x18" in rca
    assert s.extra["message"] in rca
    assert_deployment_and_safe(result, s)
    reads = [t.name for t in result.tool_calls if t.name.startswith("kubernetes_")]
    assert "kubernetes_events" in reads and "kubernetes_owner_chain" in reads
    made = kube_cluster.audit_events(user="test-admin")[before:]
    assert made and {e["verb"] for e in made} <= {"get", "list"}


async def test_pending_pod_whose_events_expired_cites_its_scheduled_condition(
    reader: ApiServerReader, kube_api: kubernetes.client.ApiClient, namespace: str
) -> None:
    s = kube_fixtures.pending_unschedulable(kube_api, namespace, events=False)
    result = await analyze(reader, s)
    rca = result.root_cause_assessment
    assert f"Pod {namespace}/{s.pod} status.conditions PodScheduled=False (Unschedulable:" in rca
    assert s.extra["message"] in rca
    assert "FailedScheduling" not in rca
    assert_deployment_and_safe(result, s)
