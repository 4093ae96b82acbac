"""ScaleReplicas and PatchHPA: more replicas for legitimate load.

Design notes: docs/internals.md (`analyst/actions/scaling.py`).
"""

from __future__ import annotations

import math
from typing import Any

from hapi_grpc.analyst.actions.admission import admission_reads, quota_room
from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.actions.memory import workload_pods
from hapi_grpc.analyst.amounts import bytes_of, cores_of
from hapi_grpc.analyst.conversation import GET, Step, pending
from hapi_grpc.analyst.series import number, pod_selector, range_read, series_of

__all__ = ["PatchAutoscaler", "ScaleOut"]

# The load "rose" when it is this much above the window's lowest: the autoscaler's
# default tolerance is 10%, so anything within it would not scale either.
_TOLERANCE = 0.1


class ScaleOut(Evidence):
    def _query(self, situation: Situation) -> str:
        pods = [p["name"] for p in workload_pods(situation)]
        selector = pod_selector(situation.namespace, pods) + ',container!=""'
        return f"sum(rate(container_cpu_usage_seconds_total{{{selector}}}[5m]))"

    def reads(self, situation: Situation) -> list[Step]:
        if not workload_pods(situation):
            return []
        read = range_read(situation.reads, self._query(situation))
        return admission_reads(situation, "ResourceQuota") + pending(read)

    def values(self, situation: Situation) -> Values | Objection:
        workload = situation.findings.workload or {}
        replicas = int((workload.get("replicas") or {}).get("desired") or 0)
        if not workload or replicas < 1:
            return Objection("no workload with a replica count was read")
        data = range_read(situation.reads, self._query(situation))
        series = series_of(data) if isinstance(data, dict) else []
        if not series:
            return Objection("no CPU usage series of the workload's Pods was read")
        low, now = number(series[0].get("min")), number(series[0].get("last"))
        if not low or now is None or now <= low * (1 + _TOLERANCE):
            return Objection("the workload's load did not rise over the window read")
        desired = math.ceil(replicas * now / low)
        refused = _over_quota(situation, workload, desired - replicas)
        if refused:
            return Objection(refused)
        values = target_values(str(workload["kind"]), situation.namespace)
        values.update(workload=str(workload["name"]), replicas=desired)
        return values


def _over_quota(situation: Situation, workload: dict[str, Any], added: int) -> str:
    """Why `added` more replicas would not be admitted by a ResourceQuota ("" if they would)."""
    containers = workload.get("template_containers", [])
    wanted = {
        "pods": float(added),
        "requests.cpu": added * sum(cores_of(c["requests"].get("cpu")) or 0 for c in containers),
        "requests.memory": added
        * sum(float(bytes_of(c["requests"].get("memory")) or 0) for c in containers),
    }
    for key, amount in wanted.items():
        room = quota_room(situation, key)
        if room is not None and amount > room[0]:
            return (
                f"{added} more replicas need {amount:g} of {key}; ResourceQuota {room[1]} has"
                f" {max(room[0], 0):g} left, so the Pods would not be admitted"
            )
    return ""


def _failing_pods(situation: Situation, record: dict[str, Any]) -> list[str]:
    """The Pods read of the autoscaler's target that crash, were OOM-killed or cannot start."""
    target = record.get("target") or {}
    workload = situation.reads.object(
        str(target.get("kind", "")), record["namespace"], str(target.get("name", ""))
    )
    selector = workload.get("selector") or {}
    failing = []
    for pod in situation.reads.pods(record["namespace"], selector) if selector else []:
        for c in pod.get("containers", []):
            last = c.get("last_termination") or {}
            waiting = c.get("state_reason", "")
            if last.get("reason") == "OOMKilled" or waiting in (
                "CrashLoopBackOff",
                "ImagePullBackOff",
                "ErrImagePull",
                "CreateContainerConfigError",
                "CreateContainerError",
            ):
                failing.append(f"{pod['name']} {waiting or last.get('reason')}")
                break
    return failing


def _metric_ratio(spec: dict[str, Any], status: dict[str, Any]) -> float | None:
    """current / target of one autoscaler metric (Utilization, AverageValue or Value)."""
    kind = str(spec.get("type", ""))
    key = {"Resource": "resource", "ContainerResource": "containerResource"}.get(
        kind, kind[:1].lower() + kind[1:]
    )
    target = (spec.get(key) or {}).get("target") or {}
    current = (status.get(key) or {}).get("current") or {}
    for field, read in (
        ("averageUtilization", number),
        ("averageValue", cores_of),
        ("value", cores_of),
    ):
        want, have = read(target.get(field)), read(current.get(field))
        if want and have is not None:
            return have / want
    return None


class PatchAutoscaler(Evidence):
    def _hpa(self, situation: Situation) -> tuple[dict[str, Any], dict[str, Any]] | Step:
        """(record, the tool's view) of the autoscaler reported or found."""
        subject = situation.subject
        if subject.kind != "HorizontalPodAutoscaler":
            return {}, {}
        arguments = {"kind": subject.kind, "namespace": subject.namespace, "name": subject.name}
        view = situation.reads.returned(GET, arguments)
        if view is None:
            return GET, arguments
        return situation.reads.object(subject.kind, subject.namespace, subject.name), view

    def reads(self, situation: Situation) -> list[Step]:
        found = self._hpa(situation)
        if isinstance(found[0], str):
            return [found]  # type: ignore[list-item]
        record = found[0]
        target = record.get("target") or {} if isinstance(record, dict) else {}
        if not target.get("kind") or not target.get("name"):
            return []
        # The workload it scales and its Pods: is the load it answers legitimate?
        workload = situation.reads.got(str(target["kind"]), record["namespace"], target["name"])
        if isinstance(workload, tuple):
            return [workload]
        selector = workload.get("selector") or {}
        # Its Pods, and the ReplicaSets that own them (a Pod is known as the workload's
        # through its ReplicaSet).
        needed: list[Step] = []
        for kind in ("Pod", "ReplicaSet"):
            needed += situation.reads.labelled(kind, record["namespace"], selector, 20)
        return needed

    def values(self, situation: Situation) -> Values | Objection:
        found = self._hpa(situation)
        record, view = found if not isinstance(found[0], str) else ({}, {})
        if not record:
            return Objection("no HorizontalPodAutoscaler was read")
        spec, status = view.get("spec") or {}, view.get("status") or {}
        current = int(record.get("current_replicas") or 0)
        maximum = int(record.get("max_replicas") or 0)
        metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
        reported = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
        ratios = [
            r
            for m, s in zip(metrics, reported, strict=False)
            if m.get("type") == s.get("type") and (r := _metric_ratio(m, s)) is not None
        ]
        if not ratios or current < 1:
            return Objection("the autoscaler reports no metric against its target")
        failing = _failing_pods(situation, record)
        if failing:
            return Objection(
                f"Pods of {record['target'].get('name')} fail ({', '.join(failing[:3])}): a failing"
                " workload burns CPU without serving, so its load is not legitimate"
            )
        desired = max(math.ceil(current * r) for r in ratios)
        if desired <= maximum:
            return Objection(
                f"the autoscaler's metrics ask for {desired} replicas, within its maximum {maximum}"
            )
        values = target_values("HorizontalPodAutoscaler", record["namespace"])
        values.update(hpa=record["name"], max_replicas=desired)
        return values
