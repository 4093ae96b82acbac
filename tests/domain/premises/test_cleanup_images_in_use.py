"""A node clean-up frees images only when no container on the node uses them.

The kubelet's image garbage collection (what a clean-up runs) never removes an image
a container uses. A disk full of the images its own Pods run is not reclaimable,
whatever the share of images in the stats summary: the Node's `status.images` and the
Pods bound to it say which images are in use; when they were not read, no image
counts. The kubelet also says so itself: `FreeDiskSpaceFailed` or `ImageGCFailed`,
"... only found 0 bytes eligible to free", on the Node.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.toolsets.kubernetes.images import images_in_use_bytes
from hapi_grpc.toolsets.kubernetes.log_facts import record_event
from hapi_grpc.toolsets.kubernetes.node_stats import node_stats_facts
from tests.domain.premises.scenes import NS, node, record, schema, verdict

GIB = 1024**3
CLEANUP = schema("CleanupNode", "NODE_NAME")
PARAMS = {"NODE_NAME": "render-3"}


def summary() -> dict[str, Any]:
    """150 of 160 GiB used: 130 GiB of images, 6 GiB of logs, 2 GiB of pods' own data."""
    fs = {"capacityBytes": 160 * GIB, "usedBytes": 150 * GIB, "availableBytes": 10 * GIB}
    return {
        "node": {
            "nodeName": "render-3",
            "fs": fs,
            "runtime": {"imageFs": {**fs, "usedBytes": 130 * GIB}},
        },
        "pods": [
            {
                "podRef": {"name": "tiles-0", "namespace": NS},
                "containers": [
                    {"name": "tiles", "logs": {"usedBytes": 6 * GIB}, "rootfs": {"usedBytes": GIB}}
                ],
                "volume": [{"name": "cache", "usedBytes": GIB}],
            }
        ],
    }


def render_node() -> dict[str, Any]:
    """The Node as its kubelet reports it: two images, 70 and 55 GB."""
    pressured = node("render-3", pressure=("DiskPressure",))
    pressured["status"]["images"] = [
        {
            "names": ["quay.io/maps/tiles@sha256:aa11", "quay.io/maps/tiles:7.2"],
            "sizeBytes": 70 * GIB,
        },
        {"names": ["docker.io/library/postgres:16"], "sizeBytes": 55 * GIB},
    ]
    return pressured


def pod_running(name: str, image: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"nodeName": "render-3", "containers": [{"name": "main", "image": image}]},
        "status": {"phase": "Running"},
    }


def test_images_the_nodes_pods_run_are_not_reclaimable() -> None:
    pods = [pod_running("tiles-0", "quay.io/maps/tiles:7.2"), pod_running("db-0", "postgres:16")]
    in_use = images_in_use_bytes(render_node(), pods)
    assert in_use == 125 * GIB  # `postgres:16` is docker.io/library/postgres:16
    observed = record(render_node())
    observed.add_node_stats(node_stats_facts("render-3", summary(), images_in_use=in_use))
    veto = verdict(observed, CLEANUP, PARAMS)
    assert veto is not None and "CleanupNode.reclaimable_data_dominates" in veto.message


def test_images_no_pod_runs_are_reclaimed() -> None:
    in_use = images_in_use_bytes(render_node(), [pod_running("db-0", "postgres:16")])
    assert in_use == 55 * GIB
    observed = record(render_node())
    observed.add_node_stats(node_stats_facts("render-3", summary(), images_in_use=in_use))
    assert verdict(observed, CLEANUP, PARAMS) is None


def test_without_the_nodes_pods_no_image_counts_as_reclaimable() -> None:
    assert images_in_use_bytes(render_node(), None) is None
    observed = record(render_node())
    observed.add_node_stats(node_stats_facts("render-3", summary()))
    veto = verdict(observed, CLEANUP, PARAMS)
    assert veto is not None and "reclaimable_data_dominates" in veto.message


def test_the_kubelet_finding_nothing_eligible_to_free_refuses_a_cleanup() -> None:
    """Even when the facts would count images as unused (a Pod's reference the Node
    names differently), the kubelet's own report that none is eligible prevails."""
    observed = record(render_node())
    observed.add_node_stats(node_stats_facts("render-3", summary(), images_in_use=0))
    assert verdict(observed, CLEANUP, PARAMS) is None
    record_event(
        observed,
        "Node",
        "",
        "render-3",
        {
            "reason": "FreeDiskSpaceFailed",
            "message": "Failed to garbage collect required amount of images. Attempted to free"
            " 13421772800 bytes, but only found 0 bytes eligible to free.",
            "type": "Warning",
            "count": 3,
        },
    )
    veto = verdict(observed, CLEANUP, PARAMS)
    assert veto is not None and "CleanupNode.images_eligible_to_free" in veto.message
