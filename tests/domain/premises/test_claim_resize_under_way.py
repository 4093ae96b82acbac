"""A claim is not expanded again while an earlier resize of it is unfinished.

Expanding a claim is a controller resize (the volume grows) then, for most volumes,
a node resize (the kubelet grows the filesystem when a Pod mounts it). Until both
finish, `status.capacity` stays below the request: the claim carries a Resizing or
FileSystemResizePending condition, or a resize error, and `allocatedResourceStatuses`
names the stage. A larger request then changes nothing the claim's Pod sees; the
waiting resize is what needs attention.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.observed import Observed
from tests.domain.premises.scenes import NS, record, schema, verdict

EXPAND = schema("ExpandPVC", "NAMESPACE", "PVC_NAME", "NEW_SIZE")
PARAMS = {"NAMESPACE": NS, "PVC_NAME": "orders-db", "NEW_SIZE": "81Gi"}
SSD = {"kind": "StorageClass", "metadata": {"name": "ssd"}, "allowVolumeExpansion": True}


def claim(capacity: str, **status: Any) -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "orders-db", "namespace": NS},
        "spec": {"storageClassName": "ssd", "resources": {"requests": {"storage": "80Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": capacity}, **status},
    }


def cluster(capacity: str, **status: Any) -> Observed:
    return record(claim(capacity, **status), SSD)


def test_a_claim_waiting_for_its_filesystem_resize_is_not_expanded_again() -> None:
    pending = {
        "type": "FileSystemResizePending",
        "status": "True",
        "message": "Waiting for user to (re-)start a pod to finish file system resize.",
    }
    observed = cluster(
        "40Gi",
        allocatedResources={"storage": "80Gi"},
        allocatedResourceStatuses={"storage": "NodeResizePending"},
        conditions=[pending],
    )
    veto = verdict(observed, EXPAND, PARAMS)
    assert veto is not None
    assert "ExpandPVC.no_resize_under_way" in veto.message


def test_a_resize_in_progress_or_failed_blocks_another() -> None:
    for condition in ("Resizing", "ControllerResizeError", "NodeResizeError"):
        observed = cluster("80Gi", conditions=[{"type": condition, "status": "True"}])
        veto = verdict(observed, EXPAND, PARAMS)
        assert veto is not None and "no_resize_under_way" in veto.message, condition


def test_capacity_below_the_request_or_the_allocation_blocks_another() -> None:
    assert verdict(cluster("40Gi"), EXPAND, PARAMS) is not None
    allocated = cluster("80Gi", allocatedResources={"storage": "90Gi"})
    assert verdict(allocated, EXPAND, PARAMS) is not None


def test_a_finished_resize_lets_the_claim_grow() -> None:
    done = cluster("80Gi", allocatedResources={"storage": "80Gi"})
    assert verdict(done, EXPAND, PARAMS) is None
