"""IncreaseMemoryLimits needs the kill to be the container's own limit: a kill by the
node's OOM killer (the kubelet's SystemOOM event on the Pod's node), or a working set
that never came near the limit, is not fixed by a higher limit."""

from __future__ import annotations

from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.kubernetes.log_facts import record_event
from hapi_grpc.toolsets.prometheus.facts import record_metric
from tests.domain.premises.scenes import (
    NS,
    container,
    oom_status,
    pod,
    record,
    schema,
    template,
    verdict,
)

GIB = 1024**3
RAISE = schema(
    "IncreaseMemoryLimits",
    "TARGET_RESOURCE_NAMESPACE",
    "TARGET_RESOURCE_KIND",
    "TARGET_RESOURCE_NAME",
    "MEMORY_LIMIT_NEW",
)
PARAMS = {
    "TARGET_RESOURCE_NAMESPACE": NS,
    "TARGET_RESOURCE_KIND": "DaemonSet",
    "TARGET_RESOURCE_NAME": "tracer",
    "MEMORY_LIMIT_NEW": "6Gi",
}


def killed_daemon() -> Observed:
    """shop/tracer, a DaemonSet whose agent was OOMKilled at its 4Gi limit on node-3."""
    daemonset = {
        "kind": "DaemonSet",
        "metadata": {"name": "tracer", "namespace": NS},
        "spec": {"template": template(container("agent", memory="4Gi"))},
        "status": {"desiredNumberScheduled": 3},
    }
    killed = pod(
        "tracer-k8d2x",
        "tracer",
        [container("agent", memory="4Gi")],
        [oom_status("agent")],
        node="node-3",
        owner_kind="DaemonSet",
    )
    return record(daemonset, killed)


def working_set(observed: Observed, peak: float) -> None:
    record_metric(
        observed,
        'container_memory_working_set_bytes{namespace="shop", pod="tracer-k8d2x"}',
        {
            "series": [
                {
                    "labels": {
                        "__name__": "container_memory_working_set_bytes",
                        "namespace": NS,
                        "pod": "tracer-k8d2x",
                        "container": "agent",
                    },
                    "min": peak * 0.9,
                    "max": peak,
                    "last": peak * 0.95,
                    "trend": {"direction": "flat", "slope_per_minute": 0.0},
                }
            ]
        },
    )


def test_a_kill_at_the_containers_own_limit_is_raised() -> None:
    observed = killed_daemon()
    working_set(observed, 3.9 * GIB)
    assert verdict(observed, RAISE, PARAMS) is None


def test_a_kill_by_the_nodes_oom_killer_is_not_a_limit_problem() -> None:
    observed = killed_daemon()
    record_event(
        observed,
        "Node",
        "",
        "node-3",
        {"reason": "SystemOOM", "type": "Warning", "message": "System OOM encountered"},
    )
    veto = verdict(observed, RAISE, PARAMS)
    assert veto is not None and "IncreaseMemoryLimits.killed_at_its_own_limit" in veto.message


def test_a_working_set_far_below_the_limit_was_not_killed_by_it() -> None:
    observed = killed_daemon()
    working_set(observed, 1.1 * GIB)
    veto = verdict(observed, RAISE, PARAMS)
    assert veto is not None and "IncreaseMemoryLimits.killed_at_its_own_limit" in veto.message


def test_a_system_oom_on_another_node_does_not_count() -> None:
    observed = killed_daemon()
    record_event(observed, "Node", "", "node-9", {"reason": "SystemOOM", "message": "x"})
    assert verdict(observed, RAISE, PARAMS) is None
