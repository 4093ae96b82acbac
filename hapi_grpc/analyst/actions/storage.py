"""ExpandPVC: a claim filling up with data it keeps.

Reads: the claim (its request, capacity and StorageClass), the StorageClass (the API
server refuses a larger request unless it sets `allowVolumeExpansion`), and the
kubelet's volume statistics over the last hours.

Values: the claim and a new size that keeps it clear of the kubernetes-mixin's
KubePersistentVolumeFillingUp condition for that alert's whole horizon: the data
used now plus four days of the growth read, at most 85% full. Never smaller than
one step above the current request.
"""

from __future__ import annotations

import math
from typing import Any

from hapi_grpc.analyst.actions.base import Objection, Situation, Values, target_values
from hapi_grpc.analyst.amounts import bytes_of
from hapi_grpc.analyst.conversation import Step
from hapi_grpc.analyst.series import number, range_read, series_of

__all__ = ["ExpandClaim"]

_HORIZON_MINUTES = 4 * 24 * 60  # predict_linear(...[6h], 4 * 24 * 3600)
_MOST_FULL = 0.85  # the mixin's warning: less than 15% available
_GI = 1024**3


class ExpandClaim:
    def _claim(self, situation: Situation) -> dict[str, Any]:
        subject = situation.subject
        if subject.kind != "PersistentVolumeClaim":
            return {}
        return situation.reads.object(subject.kind, subject.namespace, subject.name)

    def _query(self, claim: dict[str, Any]) -> str:
        return (
            f'kubelet_volume_stats_used_bytes{{namespace="{claim["namespace"]}",'
            f'persistentvolumeclaim="{claim["name"]}"}}'
        )

    def reads(self, situation: Situation) -> list[Step]:
        claim = self._claim(situation)
        if not claim:
            return []
        needed: list[Step] = []
        storage_class = str(claim.get("storage_class", ""))
        if storage_class:
            found = situation.reads.got("StorageClass", None, storage_class)
            if isinstance(found, tuple):
                needed.append(found)
        read = range_read(situation.reads, self._query(claim))
        if isinstance(read, tuple):
            needed.append(read)
        return needed

    def values(self, situation: Situation) -> Values | Objection:
        claim = self._claim(situation)
        if not claim:
            return Objection("no PersistentVolumeClaim was read")
        requested = bytes_of(claim.get("storage_request"))
        capacity = bytes_of(claim.get("capacity")) or requested
        if not requested or not capacity:
            return Objection(f"claim {claim['name']} shows no size that could be read")
        storage_class = situation.reads.object("StorageClass", "", str(claim.get("storage_class")))
        if storage_class and not storage_class.get("allow_expansion"):
            return Objection(
                f"StorageClass {storage_class['name']} does not allow volume expansion: the API"
                f" server refuses a larger request for claim {claim['name']}"
            )
        data = range_read(situation.reads, self._query(claim))
        series = series_of(data) if isinstance(data, dict) else []
        if not series:
            return Objection(f"no volume usage of claim {claim['name']} was read")
        used = number(series[0].get("last"))
        found = series[0].get("trend")
        trend: dict[str, Any] = found if isinstance(found, dict) else {}
        slope = number(trend.get("slope_per_minute")) or 0.0
        if used is None:
            return Objection(f"no volume usage of claim {claim['name']} was read")
        wanted = (used + max(slope, 0.0) * _HORIZON_MINUTES) / _MOST_FULL
        size = max(math.ceil(wanted / _GI), math.floor(max(requested, capacity) / _GI) + 1) * _GI
        values = target_values("PersistentVolumeClaim", claim["namespace"])
        values.update(pvc=claim["name"], size_bytes=size)
        return values
