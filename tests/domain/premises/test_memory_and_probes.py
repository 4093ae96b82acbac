"""IncreaseMemoryLimits and TuneProbes on catalogs without declarations: the packs decide.

The scenarios are the failures a decider got wrong on incidents the project had not
seen: a StatefulSet's limit lowered, more memory for a leak whose growth was only in
Prometheus (under a metric name without "memory"), a probe delay shorter than the
start-up time the logs state.
"""

from __future__ import annotations

from hapi_grpc.toolsets.kubernetes.log_facts import record_event, record_log
from hapi_grpc.toolsets.prometheus.facts import record_metric
from tests.domain.premises.scenes import (
    NS,
    container,
    crash_status,
    deployment,
    oom_status,
    pod,
    record,
    replica_set,
    schema,
    template,
    verdict,
)

STS = {
    "kind": "StatefulSet",
    "metadata": {"name": "ledger", "namespace": NS},
    "spec": {"replicas": 1, "template": template(container("ledger", memory="1536Mi"))},
    "status": {"replicas": 1},
}
STS_POD = pod(
    "ledger-0",
    "ledger",
    [container("ledger", memory="1536Mi")],
    [oom_status("ledger")],
    owner_kind="StatefulSet",
)
RAISE = schema(
    "IncreaseMemoryLimits",
    "TARGET_RESOURCE_NAMESPACE",
    "TARGET_RESOURCE_KIND",
    "TARGET_RESOURCE_NAME",
    "MEMORY_LIMIT_NEW",
)


def params(limit: str) -> dict[str, str]:
    return {
        "TARGET_RESOURCE_NAMESPACE": NS,
        "TARGET_RESOURCE_KIND": "statefulset",
        "TARGET_RESOURCE_NAME": "ledger",
        "MEMORY_LIMIT_NEW": limit,
    }


def test_a_lower_limit_is_refused_naming_the_premise() -> None:
    veto = verdict(record(STS, STS_POD), RAISE, params("1Gi"))
    assert veto is not None and "IncreaseMemoryLimits.memory_limit_raised" in veto.message
    assert "ledger limit 1536Mi" in veto.message and "proposed 1Gi" in veto.message


def test_a_higher_limit_for_an_oomkilled_container_is_automated() -> None:
    assert verdict(record(STS, STS_POD), RAISE, params("2Gi")) is None


def test_a_relative_increase_binds_by_its_name() -> None:
    relative = schema(
        "IncreaseMemoryLimits",
        "TARGET_RESOURCE_NAMESPACE",
        "TARGET_RESOURCE_NAME",
        "MEMORY_INCREASE_PERCENT",
    )
    base = {"TARGET_RESOURCE_NAMESPACE": NS, "TARGET_RESOURCE_NAME": "ledger"}
    assert verdict(record(STS, STS_POD), relative, {**base, "MEMORY_INCREASE_PERCENT": 50}) is None
    veto = verdict(record(STS, STS_POD), relative, {**base, "MEMORY_INCREASE_PERCENT": -10})
    assert veto is not None and "memory_limit_raised" in veto.message


def test_without_a_parameter_for_the_new_limit_the_premise_is_unknown() -> None:
    loose = schema(
        "IncreaseMemoryLimits", "TARGET_RESOURCE_NAMESPACE", "TARGET_RESOURCE_NAME", "AMOUNT"
    )
    veto = verdict(
        record(STS, STS_POD),
        loose,
        {"TARGET_RESOURCE_NAMESPACE": NS, "TARGET_RESOURCE_NAME": "ledger", "AMOUNT": "4Gi"},
    )
    assert veto is not None and "memory_limit_raised" in veto.message


def test_growth_in_any_gauge_about_the_container_is_a_leak() -> None:
    """Goroutines rising: the query names no memory, the series is about the pod."""
    observed = record(STS, STS_POD)
    record_metric(
        observed,
        'go_goroutines{namespace="shop", pod="ledger-0"}',
        {
            "series": [
                {
                    "labels": {"__name__": "go_goroutines", "namespace": NS, "pod": "ledger-0"},
                    "trend": {"direction": "rising", "slope_per_minute": 40.0},
                }
            ]
        },
    )
    veto = verdict(observed, RAISE, params("2Gi"))
    assert veto is not None and "memory_not_growing_without_bound" in veto.message


def test_a_steady_plateau_and_other_pods_growth_do_not_block() -> None:
    observed = record(STS, STS_POD)
    record_metric(
        observed,
        'container_memory_working_set_bytes{namespace="shop"}',
        {
            "series": [
                {
                    "labels": {"namespace": NS, "pod": "ledger-0", "container": "ledger"},
                    "trend": {"direction": "flat"},
                },
                {
                    "labels": {"namespace": NS, "pod": "search-7d9-x", "container": "search"},
                    "trend": {"direction": "rising"},
                },
                {  # a raw counter rises by construction
                    "labels": {"__name__": "http_requests_total", "pod": "ledger-0"},
                    "trend": {"direction": "rising"},
                },
            ]
        },
    )
    assert verdict(observed, RAISE, params("2Gi")) is None


def test_a_killed_sidecar_not_in_the_template_is_not_changed_by_it() -> None:
    injected = pod(
        "ledger-0",
        "ledger",
        [container("ledger", memory="1536Mi"), container("istio-proxy", memory="128Mi")],
        [{"name": "ledger", "state": {"running": {}}}, oom_status("istio-proxy")],
        owner_kind="StatefulSet",
    )
    veto = verdict(record(STS, injected), RAISE, params("2Gi"))
    assert veto is not None and "killed_container_in_template" in veto.message


def test_a_gitops_managed_workload_is_not_changed_directly() -> None:
    flux = {"kustomize.toolkit.fluxcd.io/name": "apps"}
    managed = {**STS, "metadata": {**STS["metadata"], "labels": flux}}
    veto = verdict(record(managed, STS_POD), RAISE, params("2Gi"))
    assert veto is not None and "change_not_reverted_by_gitops" in veto.message


# ---------------------------------------------------------------------------- probes

JVM = template(
    container(
        "api",
        livenessProbe={"httpGet": {"path": "/health", "port": 8080}, "initialDelaySeconds": 10},
    )
)
PROBED = [
    deployment("billing", 3, JVM),
    replica_set("billing", "5c8d", 3, JVM, available=0),
    pod(
        "billing-5c8d-a1",
        "billing-5c8d",
        JVM["spec"]["containers"],
        [crash_status("api", exit_code=143, restarts=7)],
    ),
]
KILLED = {
    "type": "Warning",
    "reason": "Killing",
    "message": "Container api failed liveness probe, will be restarted",
}
TUNE = schema(
    "TuneProbes", "NAMESPACE", "DEPLOYMENT_NAME", "CONTAINER_NAME", "INITIAL_DELAY_SECONDS"
)


def probed(startup_line: str) -> object:
    observed = record(*PROBED)
    record_event(observed, "Pod", NS, "billing-5c8d-a1", KILLED)
    record_log(
        observed,
        NS,
        "billing-5c8d-a1",
        "api",
        previous=True,
        lines=["Starting BillingApplication using Java 21", startup_line],
    )
    return observed


def tune(delay: int) -> dict[str, object]:
    return {
        "NAMESPACE": NS,
        "DEPLOYMENT_NAME": "billing",
        "CONTAINER_NAME": "api",
        "INITIAL_DELAY_SECONDS": delay,
    }


def test_a_delay_shorter_than_the_start_up_the_logs_state_is_refused() -> None:
    line = "Started BillingApplication in 91.4 seconds (process running for 93.0)"
    veto = verdict(probed(line), TUNE, tune(30))  # 30 + 3 x 10 s < 91.4 s
    assert veto is not None and "TuneProbes.timing_covers_startup" in veto.message


def test_a_delay_that_covers_the_start_up_is_automated() -> None:
    line = "Started BillingApplication in 91.4 seconds (process running for 93.0)"
    assert verdict(probed(line), TUNE, tune(90)) is None  # 90 + 3 x 10 s >= 91.4 s


def test_without_a_start_up_time_read_the_new_timing_is_unverified() -> None:
    veto = verdict(probed("listening on :8080"), TUNE, tune(300))
    assert veto is not None and "startup_time_read" in veto.message
