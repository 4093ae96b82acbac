"""TuneProbes: a liveness probe that kills a container before it has finished starting.

Reads: the logs of the workload's Pods, current and previous: the record keeps the
start-up time a line states (Spring Boot's `Started X in 88.7 seconds`, Quarkus'
`started in 3.2s`, `ready in 850 ms`), so every instance read counts, the one that
finished starting as well as the ones killed.

Values: the container the probe kills and an initial delay that covers the longest
start-up read with a fifth to spare (start-up time varies with the node and the
load). Without a start-up time in the logs there is no delay to propose; nor when
every killed instance ran far longer than its start-up (the probe fails a running
container: a deadlock or exhaustion, which no start-up delay changes).
"""

from __future__ import annotations

import math

from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.actions.memory import workload_pods
from hapi_grpc.analyst.conversation import LOGS, Step
from hapi_grpc.analyst.pods import liveness_kills, worst_container

__all__ = ["TuneProbes"]

_SPARE = 1.2
_PODS = 3
_TAIL = 500


class TuneProbes(Evidence):
    def _container(self, situation: Situation) -> str:
        if situation.subject.container:
            return situation.subject.container
        return str((situation.findings.container or {}).get("name", ""))

    def reads(self, situation: Situation) -> list[Step]:
        name = self._container(situation)
        if not name:
            return []
        needed: list[Step] = []
        for pod in workload_pods(situation)[:_PODS]:
            container = worst_container(pod, name)
            for previous in (False, True):
                if previous and not container.get("restarts"):
                    continue
                arguments = {
                    "namespace": pod["namespace"],
                    "pod": pod["name"],
                    "container": container.get("name", name),
                    "previous": previous,
                }
                needed += situation.reads.unread(LOGS, arguments, tail_lines=_TAIL)
        return needed

    def values(self, situation: Situation) -> Values | Objection:
        workload = situation.findings.workload or {}
        name = self._container(situation)
        if not workload or not name:
            return Objection("no workload container was read")
        if not liveness_kills(situation.reads.observed.events):
            return Objection("no event says a liveness probe failed or killed the container")
        pods = {p["name"] for p in workload_pods(situation)}
        durations = [
            float(log.get("startup_seconds") or 0.0)
            for log in situation.reads.observed.logs
            if log["pod"] in pods and log["container"] == name
        ]
        durations = [d for d in durations if d > 0]
        if not durations:
            return Objection("no log read reports how long the container takes to start")
        ran = [
            float(c["last_termination"].get("ran_seconds", -1.0))
            for pod in workload_pods(situation)
            for c in pod.get("containers", [])
            if c["name"] == name and c["last_termination"].get("reason") not in ("", "OOMKilled")
        ]
        # The kubelet kills after failureThreshold failed probes a period apart: an
        # instance that ran longer than its start-up plus two such streaks was running.
        timing: dict[str, int] = next(
            (
                t.get("probe_timing", {}).get("liveness", {})
                for t in workload.get("template_containers", [])
                if t["name"] == name
            ),
            {},
        )
        streak = timing.get("failure_threshold", 3) * timing.get("period_seconds", 10)
        if ran and min(ran) > max(durations) + 2 * streak:
            return Objection(
                f"container {name} ran {min(ran):.0f}s or more before each kill, long after it"
                f" starts ({max(durations):g}s): the probe fails a running container, which a"
                " longer start-up delay does not change"
            )
        values = target_values(str(workload["kind"]), workload["namespace"])
        values.update(
            workload=workload["name"],
            container=name,
            initial_delay_seconds=math.ceil(max(durations) * _SPARE),
        )
        return values
