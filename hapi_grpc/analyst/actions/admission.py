"""Would the API server admit the change? LimitRanges and ResourceQuotas of the namespace.

The LimitRanger admission plugin refuses a container whose limit is above its
LimitRange's `max`; the ResourceQuota plugin refuses Pods whose requests would take
the namespace's usage over a `hard` bound. A change they refuse fails when it runs,
so it is not proposed: the reads list both kinds in the target's namespace, and the
amounts are compared as quantities, whatever their notation.
"""

from __future__ import annotations

from hapi_grpc.analyst.actions.base import Situation
from hapi_grpc.analyst.amounts import bytes_of, cores_of
from hapi_grpc.analyst.conversation import LIST, Step

__all__ = ["admission_reads", "container_max", "quota_room"]

_READERS = {"cpu": cores_of, "memory": bytes_of}


def admission_reads(situation: Situation, *kinds: str) -> list[Step]:
    """The list reads of `kinds` (LimitRange, ResourceQuota) in the target's namespace."""
    namespace = situation.namespace
    if not namespace:
        return []
    needed: list[Step] = []
    for kind in kinds:
        needed += situation.reads.unread(LIST, {"kind": kind, "namespace": namespace}, limit=20)
    return needed


def container_max(situation: Situation, resource: str) -> tuple[float, str] | None:
    """The lowest container `max` of `resource` the namespace's LimitRanges set, and the
    LimitRange that sets it; None when none does."""
    read = _READERS[resource]
    bounds = [
        (amount, str(limit_range["name"]))
        for limit_range in situation.reads.objects("LimitRange", situation.namespace)
        if (amount := read((limit_range.get("container_max") or {}).get(resource))) is not None
    ]
    return min(bounds) if bounds else None


def quota_room(situation: Situation, key: str) -> tuple[float, str] | None:
    """What the namespace's ResourceQuotas still allow of `key` (`requests.cpu`,
    `requests.memory`, `pods`, ...): the smallest hard bound minus what is used."""
    resource = key.rpartition(".")[2]
    read = _READERS.get(resource, cores_of)
    room = []
    for quota in situation.reads.objects("ResourceQuota", situation.namespace):
        hard = read((quota.get("hard") or {}).get(key))
        used = read((quota.get("used") or {}).get(key)) or 0
        if hard is not None:
            room.append((float(hard) - float(used), str(quota["name"])))
    return min(room) if room else None
