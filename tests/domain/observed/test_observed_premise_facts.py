"""The typed facts the premise packs read, as the record derives them from what the tools
parsed: what a series is about, start-up times in logs, a pod template's identity
across revisions, the workload behind a Pod, the kinds beside Pods and Nodes."""

from __future__ import annotations

import pytest

from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.kubernetes.facts import object_facts, record_object
from hapi_grpc.toolsets.kubernetes.kinds import epoch
from hapi_grpc.toolsets.kubernetes.log_facts import record_log
from hapi_grpc.toolsets.prometheus.facts import query_metrics, series_subject


@pytest.mark.parametrize(
    ("query", "labels", "metric", "resource", "counter"),
    [
        (
            'container_memory_working_set_bytes{pod="a"}',
            {},
            "container_memory_working_set_bytes",
            "memory",
            False,
        ),
        ("go_memstats_heap_inuse_bytes", {}, "go_memstats_heap_inuse_bytes", "memory", False),
        ("process_resident_memory_bytes", {}, "process_resident_memory_bytes", "memory", False),
        (
            'sum by (pod) (rate(container_cpu_usage_seconds_total{namespace="a"}[5m]))',
            {},
            "container_cpu_usage_seconds_total",
            "cpu",
            False,
        ),
        (
            "http_requests_total",
            {"__name__": "http_requests_total"},
            "http_requests_total",
            "",
            True,
        ),
        ("rate(http_requests_total[5m])", {}, "http_requests_total", "", False),
        ("go_goroutines", {"__name__": "go_goroutines"}, "go_goroutines", "", False),
    ],
)
def test_a_series_is_typed_by_the_metrics_it_reads_not_by_words(
    query: str, labels: dict[str, str], metric: str, resource: str, counter: bool
) -> None:
    facts = series_subject(query, query_metrics(query), labels)
    assert (facts["metric"], facts["resource"], facts["counter"]) == (metric, resource, counter)


def test_a_series_names_its_pod_and_container_and_the_pause_container_is_the_pod() -> None:
    facts = series_subject("m", ("m",), {"namespace": "a", "pod": "p-1", "container": "POD"})
    assert (facts["namespace"], facts["pod"], facts["container"]) == ("a", "p-1", "")
    old = series_subject("m", ("m",), {"pod_name": "p-1", "container_name": "app"})
    assert (old["pod"], old["container"]) == ("p-1", "app")


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("Started PaymentApplication in 91.4 seconds (process running for 93.0)", 91.4),
        ("INFO  [io.quarkus] ledger 2.1 started in 2.345s", 2.345),
        ("server ready in 850 ms", 0.85),
        ("startup took ~2m", 120.0),
        ("warming report cache (est. 40s)", 40.0),
        ("GET /healthz 200 in 5ms", 0.0),
        ("listening on :8080", 0.0),
    ],
)
def test_a_log_line_that_states_a_start_up_time(line: str, seconds: float) -> None:
    observed = Observed()
    record_log(observed, "ns", "p", "c", previous=True, lines=["boot", line])
    assert observed.logs[0]["startup_seconds"] == pytest.approx(seconds)


def _replica_set(image: str, stamp: str | None = None) -> dict[str, object]:
    annotations = {"kubectl.kubernetes.io/restartedAt": stamp} if stamp else {}
    return {
        "kind": "ReplicaSet",
        "metadata": {"name": "w", "annotations": {"deployment.kubernetes.io/revision": "3"}},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {"app": "w", "pod-template-hash": stamp or "x"},
                    "annotations": annotations,
                },
                "spec": {"containers": [{"name": "w", "image": image}]},
            }
        },
    }


def test_a_restart_of_a_template_hashes_as_the_template_and_another_image_does_not() -> None:
    plain = object_facts(_replica_set("w:1"))
    restarted = object_facts(_replica_set("w:1", "2026-11-20T09:00:00Z"))
    other = object_facts(_replica_set("w:2"))
    assert plain["revision"] == 3
    assert plain["template_hash"] == restarted["template_hash"] != other["template_hash"]


def test_a_pod_belongs_to_the_deployment_of_its_replica_set_when_that_was_read() -> None:
    observed = Observed()
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": "web-abc-1",
            "namespace": "n",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-abc", "controller": True}],
        },
    }
    record_object(observed, pod)
    assert observed.activation()["pods"][0]["workload"] == {"kind": "ReplicaSet", "name": "web-abc"}
    record_object(
        observed,
        {
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-abc",
                "namespace": "n",
                "ownerReferences": [{"kind": "Deployment", "name": "web"}],
            },
        },
    )
    assert observed.activation()["pods"][0]["workload"] == {"kind": "Deployment", "name": "web"}


def test_gitops_marks_and_automatic_taints() -> None:
    argo = object_facts(
        {
            "kind": "Deployment",
            "metadata": {
                "name": "a",
                "annotations": {"argocd.argoproj.io/tracking-id": "app:apps/Deployment:ns/a"},
            },
        }
    )
    helm = object_facts(
        {
            "kind": "Deployment",
            "metadata": {
                "name": "h",
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": "shop"},
            },
        }
    )
    assert argo["gitops"] and not helm["gitops"] and helm["helm_release"] == "shop"
    node = object_facts(
        {
            "kind": "Node",
            "metadata": {"name": "n"},
            "spec": {
                "taints": [
                    {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                    {"key": "maintenance", "effect": "NoSchedule"},
                ]
            },
        }
    )
    assert [t["automatic"] for t in node["taints"]] == [True, False]


def test_the_kinds_a_premise_compares() -> None:
    lease = object_facts(
        {"kind": "Lease", "metadata": {"name": "n1"}, "spec": {"renewTime": "2026-11-20T10:05:00Z"}}
    )
    assert lease["renewed_at"] == epoch("2026-11-20T10:05:00Z") > 0
    budget = object_facts(
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 2},
        }
    )
    assert budget["selector"] == {"app": "a"} and budget["disruptions_allowed"] == 0
    limits = object_facts(
        {
            "kind": "LimitRange",
            "metadata": {"name": "l"},
            "spec": {"limits": [{"type": "Container", "max": {"memory": "2Gi", "cpu": "2"}}]},
        }
    )
    assert limits["container_max"] == {"memory": "2Gi", "cpu": "2"}
    storage = object_facts({"kind": "StorageClass", "metadata": {"name": "s"}})
    assert storage["allow_expansion"] is False
    policy = object_facts(
        {"kind": "NetworkPolicy", "metadata": {"name": "deny"}, "spec": {"podSelector": {}}}
    )
    assert policy["policy_types"] == ["Ingress"] and policy["ingress_rules"] == 0
