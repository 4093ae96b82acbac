"""ExpandPVC: a claim filling up with data it keeps.

Reads: the claim (its request, capacity and StorageClass), the StorageClass (the API
server refuses a larger request unless it sets `allowVolumeExpansion`), and the
kubelet's volume statistics over the last hours: of every claim of the StatefulSet
whose Pods use the claim (`<template>-<name>-<ordinal>`), when one does.

Objects when the claim grows while its replicas' claims do not (at a quarter of its
rate or less): a replicated store writes its data on every replica, so growth on one
alone is state local to that replica, which a larger volume only postpones.

Objects, too, while an earlier resize of the claim is unfinished (a resize condition,
an `allocatedResourceStatuses` entry, a capacity below the request or the size
allocated): a larger request changes nothing until that resize completes, often when
the claim's Pod restarts.

Values: the claim and a new size that keeps it clear of the kubernetes-mixin's
KubePersistentVolumeFillingUp condition for that alert's whole horizon: the data
used now plus four days of the growth read, at most 85% full. Never smaller than
one step above the current request.
"""

from __future__ import annotations

import math
from typing import Any

import re2

from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.amounts import bytes_of
from hapi_grpc.analyst.conversation import LIST, Step, pending
from hapi_grpc.analyst.series import number, range_read, series_of

__all__ = ["ExpandClaim"]

_HORIZON_MINUTES = 4 * 24 * 60  # predict_linear(...[6h], 4 * 24 * 3600)
_MOST_FULL = 0.85  # the mixin's warning: less than 15% available
_GI = 1024**3
_SHARED = 0.25  # a replica's claim growing slower than this share of the claim's does not share it
# The PersistentVolumeClaim conditions of a resize that has not completed.
_RESIZING = frozenset(
    {"Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError"}
)
_ORDINAL = re2.compile(r"-[0-9]+$")


class ExpandClaim(Evidence):
    def _claims(self, situation: Situation, claim: dict[str, Any]) -> list[str]:
        """The claim, and its replicas' (of the same volume template) when a
        StatefulSet read uses it."""
        for statefulset in situation.reads.objects("StatefulSet", claim["namespace"]):
            if claim["name"] in statefulset.get("claims", ()):
                for template in statefulset.get("claim_templates", ()):
                    stem = f"{template}-{statefulset['name']}-"
                    if claim["name"].startswith(stem):
                        return [c for c in statefulset["claims"] if c.startswith(stem)]
        return [claim["name"]]

    def _query(self, situation: Situation, claim: dict[str, Any]) -> str:
        names = self._claims(situation, claim)
        # Claim names are DNS subdomains: a dot is the only character a regex reads.
        matcher = (
            f'="{claim["name"]}"'
            if len(names) == 1
            else '=~"' + "|".join(n.replace(".", "\\\\.") for n in names) + '"'
        )
        return (
            f'kubelet_volume_stats_used_bytes{{namespace="{claim["namespace"]}",'
            f"persistentvolumeclaim{matcher}}}"
        )

    def reads(self, situation: Situation) -> list[Step]:
        claim = situation.reported("PersistentVolumeClaim")
        if not claim:
            return []
        storage_class = str(claim.get("storage_class", ""))
        found = situation.reads.got("StorageClass", None, storage_class) if storage_class else {}
        needed = pending(found)
        statefulsets = {"kind": "StatefulSet", "namespace": claim["namespace"]}
        if _ORDINAL.search(claim["name"]):
            listing = situation.reads.unread(LIST, statefulsets, limit=20)
            if listing:
                return needed + listing
        return needed + pending(range_read(situation.reads, self._query(situation, claim)))

    def values(self, situation: Situation) -> Values | Objection:
        claim = situation.reported("PersistentVolumeClaim")
        if not claim:
            return Objection("no PersistentVolumeClaim was read")
        requested = bytes_of(claim.get("storage_request"))
        capacity = bytes_of(claim.get("capacity")) or requested
        if not requested or not capacity:
            return Objection(f"claim {claim['name']} shows no size that could be read")
        unfinished = _resize_under_way(claim, requested, capacity)
        if unfinished:
            return Objection(
                f"claim {claim['name']} has a resize it has not finished ({unfinished}):"
                " another expansion changes nothing until it completes"
            )
        storage_class = situation.reads.object("StorageClass", "", str(claim.get("storage_class")))
        if storage_class and not storage_class.get("allow_expansion"):
            return Objection(
                f"StorageClass {storage_class['name']} does not allow volume expansion: the API"
                f" server refuses a larger request for claim {claim['name']}"
            )
        data = range_read(situation.reads, self._query(situation, claim))
        growth = {
            str((s.get("labels") or {}).get("persistentvolumeclaim", "")): s
            for s in (series_of(data) if isinstance(data, dict) else [])
        }
        own = growth.get(claim["name"])
        used = number(own.get("last")) if own else None
        if own is None or used is None:
            return Objection(f"no volume usage of claim {claim['name']} was read")
        slope = _slope(own) or 0.0
        for peer, series in growth.items():
            rate = _slope(series)
            if peer != claim["name"] and slope > 0 and rate is not None and rate < _SHARED * slope:
                return Objection(
                    f"claim {claim['name']} grows {slope / 2**20:.1f} MiB/min while {peer}, the"
                    f" claim of another replica, grows {rate / 2**20:.1f} MiB/min: the growth is"
                    " local to one replica, not the replicated data a larger volume would hold"
                )
        wanted = (used + max(slope, 0.0) * _HORIZON_MINUTES) / _MOST_FULL
        size = max(math.ceil(wanted / _GI), math.floor(max(requested, capacity) / _GI) + 1) * _GI
        values = target_values("PersistentVolumeClaim", claim["namespace"])
        values.update(pvc=claim["name"], size_bytes=size)
        return values


def _resize_under_way(claim: dict[str, Any], requested: int, capacity: int) -> str:
    """What shows an earlier resize of the claim is unfinished; "" when nothing does."""
    for condition in claim.get("conditions") or ():
        if condition.get("status") == "True" and condition.get("type") in _RESIZING:
            return f"condition {condition['type']}"
    if claim.get("resize_status"):
        return f"allocatedResourceStatuses {claim['resize_status']}"
    allocated = bytes_of(claim.get("allocated_storage"))
    if capacity < max(requested, allocated or 0):
        return (
            f"capacity {claim.get('capacity')} below its request {claim.get('storage_request')}"
            f" or allocated size {claim.get('allocated_storage') or '-'}"
        )
    return ""


def _slope(series: dict[str, Any]) -> float | None:
    found = series.get("trend")
    return number(found.get("slope_per_minute")) if isinstance(found, dict) else None
