"""Which of a node's images its Pods use: what image garbage collection cannot free.

The kubelet's image garbage collection (what a node clean-up does) removes only
images no container on the node uses. A Node reports its images in `status.images`
(names and sizes, the largest first); the Pods bound to it name theirs in their
spec and status. An image counts as in use when one of its names is a reference of
a container of any Pod on the node, whatever its phase (an exited container keeps
its image until it is removed). References compare in their canonical form:
`nginx:1.27` is `docker.io/library/nginx:1.27`, a missing tag is `latest`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hapi_grpc.toolsets.kubernetes.kinds import mapping

__all__ = ["images_in_use_bytes", "pod_image_references"]

_DEFAULT_REGISTRY = "docker.io"
_RUNTIME_PREFIXES = ("docker-pullable://", "docker://")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_STATUS_LISTS = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")


def canonical(reference: str) -> str:
    """An image reference as a registry names it: registry host, path, and tag or digest."""
    ref = reference.strip()
    for prefix in _RUNTIME_PREFIXES:
        ref = ref.removeprefix(prefix)
    name, _, digest = ref.partition("@")
    tag = ""
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    first, slash, _ = name.partition("/")
    if not slash:
        name = f"{_DEFAULT_REGISTRY}/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"{_DEFAULT_REGISTRY}/{name}"
    return f"{name}@{digest}" if digest else f"{name}:{tag or 'latest'}"


def pod_image_references(pods: Iterable[dict[str, Any]]) -> set[str]:
    """Every image reference the Pods' containers name, canonical."""
    found: set[str] = set()
    for pod in pods:
        spec, status = mapping(pod, "spec"), mapping(pod, "status")
        entries = [c for key in _CONTAINER_LISTS for c in spec.get(key) or []]
        entries += [c for key in _STATUS_LISTS for c in status.get(key) or []]
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            for key in ("image", "imageID"):
                value = entry.get(key)
                if isinstance(value, str) and value and not value.startswith("sha256:"):
                    found.add(canonical(value))
    return found


def images_in_use_bytes(node: dict[str, Any], pods: list[dict[str, Any]] | None) -> int | None:
    """The bytes of the Node's images some Pod on it uses; None when that cannot be
    known: the Node lists no image, or its Pods were not all read."""
    images = mapping(node, "status").get("images")
    if pods is None or not isinstance(images, list) or not images:
        return None
    used = pod_image_references(pods)
    total = 0
    for image in images:
        if not isinstance(image, dict):
            continue
        names = {canonical(n) for n in image.get("names") or [] if isinstance(n, str)}
        size = image.get("sizeBytes")
        if names & used and isinstance(size, int) and not isinstance(size, bool) and size > 0:
            total += size
    return total
