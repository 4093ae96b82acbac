"""IncreaseMemoryLimits: a container killed at its memory limit by a stable usage pattern.

Design notes: docs/internals.md (`analyst/actions/memory.py`).
"""

from __future__ import annotations

import math
from typing import Any

from hapi_grpc.analyst.actions.admission import admission_reads, container_max
from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.amounts import bytes_of, memory_after_oom
from hapi_grpc.analyst.conversation import EVENTS, Step, pending
from hapi_grpc.analyst.findings import last_termination
from hapi_grpc.analyst.series import gauge_names, pod_selector, range_read

__all__ = ["IncreaseMemory", "killed_containers", "workload_pods"]

_WORKING_SET = "container_memory_working_set_bytes"
_NODES_READ = 3


def workload_pods(situation: Situation) -> list[dict[str, Any]]:
    """The Pods read of the workload found (or the one Pod read)."""
    workload = situation.findings.workload or {}
    selector = workload.get("selector") or {}
    if selector:
        return situation.reads.pods(str(workload["namespace"]), selector)
    pod = situation.findings.pod
    return [pod] if pod else []


def killed_containers(pods: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(Pod, container) of every container last terminated OOMKilled."""
    return [
        (pod, c)
        for pod in pods
        for c in pod.get("containers", [])
        if last_termination(c).get("reason") == "OOMKilled"
    ]


class IncreaseMemory(Evidence):
    def _killed(self, situation: Situation) -> tuple[str, list[str]]:
        """The killed container's name and the Pods it was killed in."""
        killed = killed_containers(workload_pods(situation))
        if not killed:
            return "", []
        wanted = situation.subject.container or str(
            (situation.findings.container or {}).get("name")
        )
        names = [c["name"] for _, c in killed]
        name = wanted if wanted in names else names[0]
        return name, [p["name"] for p in workload_pods(situation)]

    def _queries(self, situation: Situation) -> tuple[str, str, str]:
        """The working-set query, the Pods' selector and the query of their other
        gauges ("" until the gauges were listed, or when there are none)."""
        name, pods = self._killed(situation)
        selector = pod_selector(situation.namespace, pods)
        working_set = f"{_WORKING_SET}{{{pod_selector(situation.namespace, pods, name)}}}"
        gauges = gauge_names(situation.reads, selector)
        others = [g for g in gauges if g != _WORKING_SET] if isinstance(gauges, list) else []
        query = f'{{__name__=~"{"|".join(others)}",{selector}}}' if others else ""
        return working_set, selector, query

    def reads(self, situation: Situation) -> list[Step]:
        name, _ = self._killed(situation)
        if not name:
            return []
        working_set, selector, others = self._queries(situation)
        needed = admission_reads(situation, "LimitRange") + pending(
            range_read(situation.reads, working_set),
            gauge_names(situation.reads, selector),
            range_read(situation.reads, others) if others else None,
        )
        return needed + self._node_events(situation)

    def _node_events(self, situation: Situation) -> list[Step]:
        """The events of the nodes the kills happened on: the kubelet reports a kill by
        the node's own OOM killer (SystemOOM) there, which a higher limit cannot prevent."""
        nodes = sorted(
            {str(p.get("node") or "") for p, _ in killed_containers(workload_pods(situation))}
        )
        needed: list[Step] = []
        for node in [n for n in nodes if n][:_NODES_READ]:
            needed += situation.reads.unread(EVENTS, {"kind": "Node", "name": node}, limit=20)
        return needed

    def _growth(self, situation: Situation, name: str) -> tuple[list[str], int | None]:
        """The gauges read about the workload's Pods (other than CPU) that keep rising,
        and the killed container's working-set peak, from the service's record."""
        pods = {p["name"] for p in workload_pods(situation)}
        rising: list[str] = []
        peak: int | None = None
        for query in situation.reads.observed.metrics:
            for series in query["series"]:
                about = series.get("pod") in pods and series.get("container") in ("", name)
                if not about or series.get("counter") or series.get("resource") == "cpu":
                    continue
                if series.get("trend") == "rising":
                    rising.append(str(series.get("metric") or query["query"]))
                high = series.get("max")
                if series.get("metric") == _WORKING_SET and high is not None:
                    peak = max(peak or 0, math.ceil(high))
        return sorted(set(rising)), peak

    def values(self, situation: Situation) -> Values | Objection:
        name, _ = self._killed(situation)
        if not name:
            return Objection("no container of the workload's Pods read was OOMKilled")
        rising, peak = self._growth(situation, name)
        if rising:
            return Objection(
                f"usage about the killed container keeps rising over the window read"
                f" ({', '.join(rising[:3])}): growth without bound, which a higher limit"
                " only delays"
            )
        limits = [
            bytes_of(c.get("limits", {}).get("memory"))
            for _, c in killed_containers(workload_pods(situation))
            if c["name"] == name
        ]
        workload = situation.findings.workload or {}
        limits += [
            bytes_of(t.get("limits", {}).get("memory"))
            for t in workload.get("template_containers", [])
            if t["name"] == name
        ]
        known = [amount for amount in limits if amount]
        if not known:
            return Objection(f"container {name} has no memory limit that could be read")
        current = max(known)
        new = memory_after_oom(current, peak)
        bound = container_max(situation, "memory")
        if bound is not None and new > bound[0]:
            return Objection(
                f"the limit container {name} needs ({new} bytes) is above the {bound[0]:.0f}"
                f" bytes LimitRange {bound[1]} allows a container: the change would not be"
                " admitted"
            )
        values = target_values(str(workload.get("kind", "")), situation.namespace)
        values.update(
            workload=str(workload.get("name", "")),
            container=name,
            memory_limit_bytes=new,
            memory_increase_percent=math.ceil((new / current - 1) * 100),
        )
        return values
