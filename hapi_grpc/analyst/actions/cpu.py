"""IncreaseCPULimits: a container throttled by its CFS quota under legitimate load.

Reads: the share of CFS periods in which the workload's containers were throttled
over the last hours (cAdvisor's `container_cpu_cfs_throttled_periods_total` over
`container_cpu_cfs_periods_total`).

Values: the container and a new limit that covers the demand the throttling shows:
a container throttled in a share `r` of its periods at limit `L` wanted about
`L / (1 - r)` cores. Below the kubernetes-mixin's CPUThrottlingHigh threshold (25% of
periods) the container is not throttled enough for a limit to be the cause; above a
LimitRange's container maximum the change would not be admitted.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.actions.admission import admission_reads, container_max
from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.actions.memory import workload_pods
from hapi_grpc.analyst.amounts import cores_of
from hapi_grpc.analyst.conversation import Step, pending
from hapi_grpc.analyst.series import number, pod_selector, range_read, series_of

__all__ = ["IncreaseCPU"]

_THROTTLED_SHARE = 0.25  # kubernetes-mixin CPUThrottlingHigh
_MOST = 0.95  # a share this close to 1 says nothing about how much more is wanted


class IncreaseCPU(Evidence):
    def _query(self, situation: Situation) -> str:
        pods = [p["name"] for p in workload_pods(situation)]
        selector = pod_selector(situation.namespace, pods) + ',container!=""'
        throttled = f"container_cpu_cfs_throttled_periods_total{{{selector}}}"
        periods = f"container_cpu_cfs_periods_total{{{selector}}}"
        return (
            f"sum by (container) (rate({throttled}[5m])) / sum by (container) (rate({periods}[5m]))"
        )

    def reads(self, situation: Situation) -> list[Step]:
        if not workload_pods(situation):
            return []
        read = range_read(situation.reads, self._query(situation), "1h")
        return admission_reads(situation, "LimitRange") + pending(read)

    def _throttled(self, situation: Situation) -> dict[str, float]:
        """Container -> the mean share of its periods throttled over the window read."""
        data = range_read(situation.reads, self._query(situation), "1h")
        shares: dict[str, float] = {}
        for series in series_of(data) if isinstance(data, dict) else []:
            name = str((series.get("labels") or {}).get("container", ""))
            mean = number(series.get("mean"))
            if name and mean is not None:
                shares[name] = max(shares.get(name, 0.0), mean)
        return shares

    def values(self, situation: Situation) -> Values | Objection:
        workload = situation.findings.workload or {}
        shares = self._throttled(situation)
        if not shares:
            return Objection("no CFS throttling series was read for the workload's containers")
        name, share = max(shares.items(), key=lambda item: item[1])
        if share < _THROTTLED_SHARE:
            return Objection(
                f"container {name} was throttled in {share:.0%} of its CFS periods, below the"
                f" {_THROTTLED_SHARE:.0%} at which a CPU limit is the bottleneck"
            )
        template: dict[str, Any] = next(
            (t for t in workload.get("template_containers", []) if t["name"] == name), {}
        )
        limit = cores_of(template.get("limits", {}).get("cpu"))
        if not limit:
            return Objection(f"container {name} has no CPU limit that could be read")
        wanted = limit / (1 - min(share, _MOST))
        bound = container_max(situation, "cpu")
        if bound is not None and wanted > bound[0]:
            return Objection(
                f"container {name} needs about {wanted:.2f} cores, above the {bound[0]:g} cores"
                f" LimitRange {bound[1]} allows a container: the change would not be admitted"
            )
        values = target_values(str(workload.get("kind", "")), situation.namespace)
        values.update(workload=str(workload.get("name", "")), container=name, cpu_cores=wanted)
        return values
