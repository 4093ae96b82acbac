"""RollbackDeployment, DrainNode, RebootNode and CleanupNode on catalogs without
declarations: what each needs shown, and the failures that look like their case but
are not (a crash caused by a ConfigMap, a "previous revision" that only restarted the
same broken template, one pod's emptyDir filling a disk, a drain while nodes are down).
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.kubernetes.facts import record_object
from hapi_grpc.toolsets.kubernetes.log_facts import record_log
from hapi_grpc.toolsets.kubernetes.node_stats import node_stats_facts
from tests.domain.premises.scenes import (
    NS,
    container,
    crash_status,
    deployment,
    node,
    pod,
    record,
    replica_set,
    running_status,
    schema,
    template,
    verdict,
)

GOOD = template(container("web", image="web:1.4"))
BAD = template(container("web", image="web:1.5"))
RESTARTED_BAD = template(
    container("web", image="web:1.5"),
    annotations={"kubectl.kubernetes.io/restartedAt": "2026-11-20T09:00:00Z"},
)
ROLLBACK = schema("RollbackDeployment", "TARGET_RESOURCE_NAMESPACE", "TARGET_RESOURCE_NAME")
PARAMS = {"TARGET_RESOURCE_NAMESPACE": NS, "TARGET_RESOURCE_NAME": "web"}


def failing_pod(owner: str, image: str = "web:1.5") -> dict[str, Any]:
    return pod(f"{owner}-p1", owner, [container("web", image=image)], [crash_status("web", 2)])


def release(log: list[str], *revisions: dict[str, Any], current: dict[str, Any]) -> Observed:
    """The Deployment at its last revision, its ReplicaSets, a failing Pod of the last one
    and that Pod's previous log."""
    newest = revisions[-1]
    revision = int(newest["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
    observed = record(
        deployment("web", revision, current),
        *revisions,
        failing_pod(newest["metadata"]["name"]),
    )
    record_log(observed, NS, f"{newest['metadata']['name']}-p1", "web", previous=True, lines=log)
    return observed


PANIC = ["web 1.5 starting", "panic: runtime error: nil pointer dereference"]


def test_a_bad_release_is_rolled_back_to_the_template_before_it() -> None:
    observed = release(
        PANIC, replica_set("web", "a1", 4, GOOD), replica_set("web", "b2", 5, BAD), current=BAD
    )
    assert verdict(observed, ROLLBACK, PARAMS) is None


def test_a_crash_caused_by_a_configmap_is_not_rolled_back() -> None:
    configured = template(
        {**container("web", image="web:1.5"), "envFrom": [{"configMapRef": {"name": "web-env"}}]}
    )
    good = template(
        {**container("web", image="web:1.4"), "envFrom": [{"configMapRef": {"name": "web-env"}}]}
    )
    observed = release(
        ["web 1.5 starting", "FATAL: config key DATABASE_URL missing"],
        replica_set("web", "a1", 4, good),
        replica_set("web", "b2", 5, configured),
        current=configured,
    )
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None and "RollbackDeployment.cause_inside_the_template" in veto.message


def test_the_previous_revision_that_only_restarted_the_broken_template_is_refused() -> None:
    observed = release(
        PANIC,
        replica_set("web", "a1", 4, GOOD),
        replica_set("web", "b2", 5, BAD),
        replica_set("web", "b2r", 6, RESTARTED_BAD),
        current=RESTARTED_BAD,
    )
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None and "revision_runs_another_template" in veto.message
    # Naming the good revision explicitly is another matter: it ran the template
    # the latest change replaced.
    explicit = schema(
        "RollbackDeployment", "TARGET_RESOURCE_NAMESPACE", "TARGET_RESOURCE_NAME", "REVISION"
    )
    assert verdict(observed, explicit, {**PARAMS, "REVISION": 4}) is None


def test_a_failure_older_revisions_share_did_not_begin_with_the_rollout() -> None:
    observed = release(
        PANIC, replica_set("web", "a1", 4, GOOD), replica_set("web", "b2", 5, BAD), current=BAD
    )
    record_object(observed, failing_pod("web-a1", image="web:1.4"))
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None and "failure_began_with_latest_rollout" in veto.message


def test_a_helm_release_is_not_rolled_back_behind_helms_back() -> None:
    observed = release(
        PANIC, replica_set("web", "a1", 4, GOOD), replica_set("web", "b2", 5, BAD), current=BAD
    )
    managed = deployment("web", 5, BAD, labels={"app.kubernetes.io/managed-by": "Helm"})
    managed["metadata"]["annotations"]["meta.helm.sh/release-name"] = "web"
    record_object(observed, managed)
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None and "not_a_helm_release" in veto.message


def test_without_the_revision_history_read_a_rollback_is_unverified() -> None:
    observed = record(
        deployment("web", 5, BAD), replica_set("web", "b2", 5, BAD), failing_pod("web-b2")
    )
    record_log(observed, NS, "web-b2-p1", "web", previous=True, lines=PANIC)
    veto = verdict(observed, ROLLBACK, PARAMS)
    assert veto is not None and "revision_runs_another_template" in veto.message


# ------------------------------------------------------------------------------ nodes

DRAIN = schema("DrainNode", "NODE_NAME")
REBOOT = schema("RebootNode", "NODE_NAME")


def node_pods(target: str, *owners: str) -> list[dict[str, Any]]:
    return [
        pod(f"{o}-x", o, [container(o)], [crash_status(o)], node=target, owner_kind="StatefulSet")
        for o in owners
    ]


def test_a_node_scoped_failure_with_room_elsewhere_is_drained() -> None:
    observed = record(
        node("n1", "False"), node("n2"), node("n3"), *node_pods("n1", "cache", "queue")
    )
    assert verdict(observed, DRAIN, {"NODE_NAME": "n1"}) is None


def test_one_workload_failing_on_a_node_is_not_a_node_failure() -> None:
    observed = record(node("n1", "False"), node("n2"), *node_pods("n1", "cache"))
    veto = verdict(observed, DRAIN, {"NODE_NAME": "n1"})
    assert veto is not None and "DrainNode.several_workloads_affected" in veto.message


def test_no_drain_while_most_other_nodes_are_down_or_under_maintenance() -> None:
    down = record(
        node("n1", "False"),
        node("n2", "Unknown"),
        node("n3", "False"),
        node("n4"),
        *node_pods("n1", "cache", "queue"),
    )
    veto = verdict(down, DRAIN, {"NODE_NAME": "n1"})
    assert veto is not None and "other_nodes_can_absorb" in veto.message
    cordoned = record(
        node("n1", "False", unschedulable=True), node("n2"), *node_pods("n1", "cache", "queue")
    )
    veto = verdict(cordoned, DRAIN, {"NODE_NAME": "n1"})
    assert veto is not None and "no_maintenance_marker" in veto.message


def test_a_disruption_budget_at_zero_blocks_the_drain() -> None:
    budget = {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "cache", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1},
    }
    observed = record(node("n1", "False"), node("n2"), budget, *node_pods("n1", "cache", "queue"))
    veto = verdict(observed, DRAIN, {"NODE_NAME": "n1"})
    assert veto is not None and "disruption_budgets_allow" in veto.message


def test_a_reboot_needs_the_host_shown_unresponsive() -> None:
    pods = node_pods("n1", "cache", "queue")
    posting = record(node("n1", "False"), node("n2"), node("n3"), *pods)  # kubelet reports
    veto = verdict(posting, REBOOT, {"NODE_NAME": "n1"})
    assert veto is not None and "RebootNode.host_unresponsive" in veto.message
    lease = {
        "kind": "Lease",
        "metadata": {"name": "n1", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "n1", "renewTime": "2026-11-20T10:05:00.000000Z"},
    }
    stopped = node("n1", "Unknown", since="2026-11-20T10:00:00Z")
    silent = record(stopped, node("n2"), node("n3"), *pods)
    assert verdict(silent, REBOOT, {"NODE_NAME": "n1"}) is None
    record_object(silent, lease)  # renewed after the kubelet "stopped": it is alive
    veto = verdict(silent, REBOOT, {"NODE_NAME": "n1"})
    assert veto is not None and "host_unresponsive" in veto.message


# ---------------------------------------------------------------------------- cleanup

GIB = 1024**3
CLEANUP = schema("CleanupNode", "TARGET_RESOURCE_NAME")


def summary(*, images: int, logs: int, empty_dir: int) -> dict[str, Any]:
    fs = {"capacityBytes": 100 * GIB, "usedBytes": 95 * GIB, "availableBytes": 5 * GIB}
    return {
        "node": {"nodeName": "n1", "fs": fs, "runtime": {"imageFs": {**fs, "usedBytes": images}}},
        "pods": [
            {
                "podRef": {"name": "ingest-0", "namespace": NS},
                "containers": [{"name": "ingest", "logs": {"usedBytes": logs}}],
                "volume": [{"name": "spool", "usedBytes": empty_dir}],
            }
        ],
    }


def test_a_disk_full_of_one_pods_emptydir_is_not_cleaned_up() -> None:
    observed = record(node("n1", pressure=("DiskPressure",)))
    observed.add_node_stats(
        node_stats_facts("n1", summary(images=8 * GIB, logs=GIB, empty_dir=80 * GIB))
    )
    veto = verdict(observed, CLEANUP, {"TARGET_RESOURCE_NAME": "n1"})
    assert veto is not None and "CleanupNode.reclaimable_data_dominates" in veto.message
    assert f"{NS}/ingest-0/spool" in veto.message


def test_a_disk_full_of_images_and_logs_is_cleaned_up() -> None:
    observed = record(node("n1", pressure=("DiskPressure",)))
    # No Pod on the node uses the images (the Node's images and its Pods were read).
    observed.add_node_stats(
        node_stats_facts(
            "n1", summary(images=60 * GIB, logs=20 * GIB, empty_dir=GIB), images_in_use=0
        )
    )
    assert verdict(observed, CLEANUP, {"TARGET_RESOURCE_NAME": "n1"}) is None


def test_without_the_kubelets_stats_a_cleanup_is_unverified() -> None:
    observed = record(node("n1", pressure=("DiskPressure",)))
    veto = verdict(observed, CLEANUP, {"TARGET_RESOURCE_NAME": "n1"})
    assert veto is not None and "reclaimable_data_dominates" in veto.message


def test_running_pods_are_not_what_a_restart_fixes() -> None:
    """RestartPod: a crash-looping Pod fails again when recreated; a hung one does not."""
    restart = schema("RestartPod", "NAMESPACE", "POD_NAME")
    sibling = pod("web-a1-ok", "web-a1", [container("web")], [running_status("web")], ready=True)
    stuck = [{"name": "web", "state": {"running": {}}}]  # running, never Ready: hung
    hung = pod("web-a1-hung", "web-a1", [container("web")], stuck)
    observed = record(node("node-1"), sibling, hung)
    assert verdict(observed, restart, {"NAMESPACE": NS, "POD_NAME": "web-a1-hung"}) is None
    looping = pod("web-a1-loop", "web-a1", [container("web")], [crash_status("web")])
    record_object(observed, looping)
    veto = verdict(observed, restart, {"NAMESPACE": NS, "POD_NAME": "web-a1-loop"})
    assert veto is not None and "not_failing_like_a_fresh_pod" in veto.message
