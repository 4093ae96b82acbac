"""Precondition evaluation per investigation: the catalog's CEL declarations on what was read.

Run: python bench/bench_preconditions.py [--runs 2000] [--target-us 5000]

One investigation of an OOMKilled Deployment, as the service sees it: the
Deployment, its ReplicaSet, three Pods (two containers each, one OOMKilled),
the Node, ten events, two logs and a memory range query in the observed
record. Per investigation the gate evaluates the preconditions of the five
search results shown to the model (no parameters yet), then the whole gate
(preconditions and invariants) for two selections, as the validation tool and
the final check do. Prints the median and p95 in microseconds and exits 1
when the median misses the target. The record's activation is rebuilt every
investigation (a new record), so that cost is included; filling the record
is the tools' work and is not timed here. Also printed: the same gate on an
empty record (no cluster read: an alert storm without a cluster), where the
conditions over `observed` alone take their one value on it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hapi_grpc.adapters.catalog.loader import load_bundled_catalog  # noqa: E402
from hapi_grpc.domain.incident import Incident, SignalInfo  # noqa: E402
from hapi_grpc.domain.observed import Observed  # noqa: E402
from hapi_grpc.domain.selection_gate import SelectionGate  # noqa: E402
from hapi_grpc.toolsets.kubernetes.facts import record_object  # noqa: E402
from hapi_grpc.toolsets.kubernetes.log_facts import record_event, record_log  # noqa: E402
from hapi_grpc.toolsets.prometheus.facts import record_metric  # noqa: E402

# On the median: the p95 of a few milliseconds swings with the other work on a
# shared 2-core machine, the median does not.
TARGET_US = 5000.0
SEARCHED = (
    "oomkill-increase-memory-v1",
    "oomkill-scale-down-v1",
    "crashloop-config-fix-restart-v1",
    "restart-pod-v1",
    "collect-cluster-diagnostics-v1",
)
SELECTED = {
    "oomkill-increase-memory-v1": {
        "NAMESPACE": "payments",
        "DEPLOYMENT_NAME": "payment-api",
        "MEMORY_LIMIT_NEW": "1Gi",
    },
    "oomkill-scale-down-v1": {
        "NAMESPACE": "payments",
        "DEPLOYMENT_NAME": "payment-api",
        "REPLICA_COUNT": 2,
    },
}


def _container(name: str, memory: str, oom: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = {"name": name, "image": f"{name}:1", "resources": {"limits": {"memory": memory}}}
    last = {"terminated": {"reason": "OOMKilled" if oom else "Completed", "exitCode": 137}}
    status = {"name": name, "ready": not oom, "restartCount": 5 if oom else 0, "lastState": last}
    return spec, status


def _record() -> Observed:
    observed = Observed()
    app, app_status = _container("payment-api", "512Mi", True)
    proxy, proxy_status = _container("istio-proxy", "128Mi", False)
    template = {"spec": {"containers": [app]}}
    record_object(
        observed,
        {
            "kind": "Deployment",
            "metadata": {
                "name": "payment-api",
                "namespace": "payments",
                "annotations": {"deployment.kubernetes.io/revision": "3"},
                "labels": {"app": "payment-api"},
            },
            "spec": {"replicas": 3, "template": template},
            "status": {"readyReplicas": 2},
        },
    )
    record_object(
        observed,
        {
            "kind": "ReplicaSet",
            "metadata": {
                "name": "payment-api-6d9f7c5b8",
                "namespace": "payments",
                "ownerReferences": [{"kind": "Deployment", "name": "payment-api"}],
            },
            "spec": {"replicas": 3, "template": template},
        },
    )
    for i in range(3):
        record_object(
            observed,
            {
                "kind": "Pod",
                "metadata": {
                    "name": f"payment-api-6d9f7c5b8-x2k4{i}",
                    "namespace": "payments",
                    "ownerReferences": [{"kind": "ReplicaSet", "name": "payment-api-6d9f7c5b8"}],
                },
                "spec": {"nodeName": "worker-1", "containers": [app, proxy]},
                "status": {"phase": "Running", "containerStatuses": [app_status, proxy_status]},
            },
        )
    record_object(
        observed,
        {
            "kind": "Node",
            "metadata": {"name": "worker-1"},
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    )
    for i in range(10):
        record_event(
            observed,
            "Pod",
            "payments",
            "payment-api-6d9f7c5b8-x2k40",
            {"type": "Warning", "reason": "BackOff", "message": f"Back-off {i}", "count": i},
        )
    for previous in (True, False):
        record_log(
            observed,
            "payments",
            "payment-api-6d9f7c5b8-x2k40",
            "payment-api",
            previous=previous,
            lines=["starting", "loading 412000 records", "heap in use 498Mi of 512Mi"],
        )
    record_metric(
        observed,
        'container_memory_working_set_bytes{namespace="payments"}',
        {
            "series": [
                {"labels": {"pod": "p"}, "min": 1.0, "max": 5.0, "trend": {"direction": "flat"}}
            ]
        },
    )
    return observed


async def one_investigation(
    catalog: dict[str, Any], incident: Incident, observed: Observed
) -> None:
    gate = SelectionGate(incident, observed)
    with gate.reusing():  # as the search tool does for the hits it shows
        for workflow_id in SEARCHED:
            gate.refuted(workflow_id, catalog[workflow_id])
    for workflow_id, params in SELECTED.items():
        await gate.check(workflow_id, catalog[workflow_id], params)


async def main() -> int:
    parser = argparse.ArgumentParser(description="precondition evaluation per investigation")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--target-us", type=float, default=TARGET_US)
    args = parser.parse_args()
    catalog = {w.workflow_id: w for w in load_bundled_catalog()}  # compiles every expression
    incident = Incident(
        "rr-bench",
        SignalInfo(
            "OOMKilled",
            None,
            "deployment",
            namespace="payments",
            resource_kind="Deployment",
            resource_name="payment-api",
        ),
    )
    await one_investigation(catalog, incident, _record())  # warm
    gate = SelectionGate(incident, _record())
    verdict = await gate.check(
        "oomkill-increase-memory-v1",
        catalog["oomkill-increase-memory-v1"],
        SELECTED["oomkill-increase-memory-v1"],
    )
    records = [_record() for _ in range(args.runs)]  # what the tools recorded: not timed
    times = []
    for observed in records:
        started = time.perf_counter()
        await one_investigation(catalog, incident, observed)
        times.append((time.perf_counter() - started) * 1e6)
    times.sort()
    median = statistics.median(times)
    empty = []
    for _ in range(args.runs):
        started = time.perf_counter()
        await one_investigation(catalog, incident, Observed())
        empty.append((time.perf_counter() - started) * 1e6)
    p95 = times[int(len(times) * 0.95) - 1]
    declared = sum(len(catalog[w].preconditions) for w in SEARCHED) + sum(
        len(catalog[w].preconditions) + len(catalog[w].invariants) for w in SELECTED
    )
    print(f"expressions evaluated per investigation: {declared}")
    print(
        "increase-memory on the sample record:",
        f"vetoed: {verdict.message}" if verdict else "automated",
    )
    print(
        f"precondition evaluation per investigation: median {median:.0f} us, p95 {p95:.0f} us"
        f" (target median <= {args.target_us:.0f} us) over {args.runs} runs"
    )
    print(f"on an empty record: median {statistics.median(empty):.0f} us")
    if median > args.target_us:
        print("MISSED")
        return 1
    print("met")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
