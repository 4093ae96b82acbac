"""CleanupNode counts what a clean-up frees against everything the disk holds: bytes the
kubelet's stats summary attributes to no pod (a hostPath buffer, the host's own files)
are freed by no image or log clean-up, however small the pods' own volumes are."""

from __future__ import annotations

from typing import Any

from hapi_grpc.toolsets.kubernetes.node_stats import node_stats_facts
from tests.domain.premises.scenes import NS, node, record, schema, verdict

GIB = 1024**3
CLEANUP = schema("CleanupNode", "NODE_NAME")


def summary(*, used: int, images: int, logs: int, rootfs: int, empty_dir: int) -> dict[str, Any]:
    """A kubelet's summary of a 200 GiB node filesystem that also holds the images."""
    fs = {"capacityBytes": 200 * GIB, "usedBytes": used, "availableBytes": 200 * GIB - used}
    return {
        "node": {"nodeName": "w7", "fs": fs, "runtime": {"imageFs": {**fs, "usedBytes": images}}},
        "pods": [
            {
                "podRef": {"name": "metrics-agent-4xk2p", "namespace": NS},
                "containers": [
                    {"name": "agent", "logs": {"usedBytes": logs}, "rootfs": {"usedBytes": rootfs}}
                ],
                "volume": [{"name": "scratch", "usedBytes": empty_dir}],
            }
        ],
    }


def test_bytes_no_pod_accounts_for_are_counted_as_unattributed() -> None:
    facts = node_stats_facts(
        "w7",
        summary(used=180 * GIB, images=12 * GIB, logs=3 * GIB, rootfs=GIB, empty_dir=GIB),
        images_in_use=0,
    )
    assert facts["unattributed_bytes"] == 163 * GIB
    assert facts["reclaimable_bytes"] == 15 * GIB and facts["workload_bytes"] == 2 * GIB


def test_a_disk_filled_outside_any_pods_stats_is_not_cleaned_up() -> None:
    """Images and logs outweigh the pods' volumes and layers, yet they are a twelfth of the
    used disk: the rest sits where the kubelet reclaims nothing (hostPath, host files)."""
    observed = record(node("w7", pressure=("DiskPressure",)))
    observed.add_node_stats(
        node_stats_facts(
            "w7",
            summary(used=180 * GIB, images=12 * GIB, logs=3 * GIB, rootfs=GIB, empty_dir=GIB),
        )
    )
    veto = verdict(observed, CLEANUP, {"NODE_NAME": "w7"})
    assert veto is not None and "CleanupNode.reclaimable_data_dominates" in veto.message


def test_a_disk_mostly_full_of_images_and_logs_is_cleaned_up() -> None:
    observed = record(node("w7", pressure=("DiskPressure",)))
    observed.add_node_stats(
        node_stats_facts(
            "w7",
            summary(used=180 * GIB, images=120 * GIB, logs=30 * GIB, rootfs=2 * GIB, empty_dir=GIB),
            images_in_use=0,
        )
    )
    assert verdict(observed, CLEANUP, {"NODE_NAME": "w7"}) is None
