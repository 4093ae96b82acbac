"""A StatefulSet's claim is expanded only when its growth is the replicated data.

A store replicated across a StatefulSet's Pods writes its data on each replica's
claim; when one claim grows while the other current replicas' claims stay put, the
bytes are local to that replica (a retained write-ahead log, logs, temporary
files), and a larger volume, which cannot shrink back, only postpones the fill. A
claim kept after a scale-in has no Pod writing to it and is no peer.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.observed import Observed
from hapi_grpc.toolsets.prometheus.facts import record_metric
from tests.domain.premises.scenes import NS, container, record, schema, template, verdict

GI = 1024**3
EXPAND = schema("ExpandPVC", "NAMESPACE", "PVC_NAME", "NEW_SIZE")
PARAMS = {"NAMESPACE": NS, "PVC_NAME": "data-queue-0", "NEW_SIZE": "200Gi"}


def claim(name: str) -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"storageClassName": "ssd", "resources": {"requests": {"storage": "100Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "100Gi"}},
    }


def queue_cluster(replicas: int = 3) -> Observed:
    """shop/queue, a StatefulSet of `replicas` with a `data` claim template, its
    claim 0 and an expandable StorageClass."""
    statefulset = {
        "kind": "StatefulSet",
        "metadata": {"name": "queue", "namespace": NS},
        "spec": {
            "replicas": replicas,
            "template": template(container("broker")),
            "volumeClaimTemplates": [{"metadata": {"name": n}} for n in ("data", "logs")],
        },
        "status": {"replicas": replicas},
    }
    ssd = {
        "kind": "StorageClass",
        "metadata": {"name": "ssd"},
        "allowVolumeExpansion": True,
    }
    return record(statefulset, claim("data-queue-0"), ssd)


def used(observed: Observed, per_minute: dict[str, float]) -> None:
    """The kubelet's used bytes of each claim named, growing `per_minute` bytes."""
    query = f'kubelet_volume_stats_used_bytes{{namespace="{NS}",persistentvolumeclaim=~"data-.*"}}'
    series = [
        {
            "labels": {"namespace": NS, "persistentvolumeclaim": name},
            "last": 60.0 * GI,
            "trend": {"direction": "rising" if slope else "flat", "slope_per_minute": slope},
        }
        for name, slope in per_minute.items()
    ]
    record_metric(observed, query, {"series": series})


def test_growth_on_one_replica_alone_is_not_expanded() -> None:
    observed = queue_cluster()
    used(observed, {"data-queue-0": 25e6, "data-queue-1": 0.0, "data-queue-2": 24e6})
    veto = verdict(observed, EXPAND, PARAMS)
    assert veto is not None
    assert "ExpandPVC.growth_shared_by_the_other_replicas" in veto.message


def test_growth_every_replica_shares_is_expanded() -> None:
    observed = queue_cluster()
    used(observed, {"data-queue-0": 25e6, "data-queue-1": 22e6, "data-queue-2": 24e6})
    assert verdict(observed, EXPAND, PARAMS) is None


def test_a_claim_kept_after_a_scale_in_is_no_peer() -> None:
    """queue scaled in to 2: data-queue-2 is written by no Pod, so its flat line says
    nothing about the growth of data-queue-0."""
    observed = queue_cluster(replicas=2)
    used(observed, {"data-queue-0": 25e6, "data-queue-1": 23e6, "data-queue-2": 0.0})
    assert verdict(observed, EXPAND, PARAMS) is None


def test_without_the_peers_read_the_claim_alone_decides() -> None:
    observed = queue_cluster()
    used(observed, {"data-queue-0": 25e6})
    assert verdict(observed, EXPAND, PARAMS) is None


def test_another_volume_template_of_the_same_pod_is_no_peer() -> None:
    """logs-queue-0 is the same Pod's other volume, not another replica's data."""
    observed = queue_cluster(replicas=1)
    used(observed, {"data-queue-0": 25e6, "logs-queue-0": 0.0})
    assert verdict(observed, EXPAND, PARAMS) is None
