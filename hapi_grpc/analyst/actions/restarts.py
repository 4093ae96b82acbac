"""Pod and workload restarts: RestartPod, DeletePod, RecreatePod, RestartDeployment,
GracefulRestart, and the clean-up of evicted Pods.

Their premises are about the Pod, its siblings and its Node: the general reads cover
the Pod's owners and Node (the owner chain), RestartPod lists the siblings. RecreatePod reads the
Pod itself for its restart policy: a run-to-completion Pod that failed under
`restartPolicy: Never` is recreated with `OnFailure`, the one policy that retries a
failed run without restarting a finished one.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.conversation import GET, Step, pending

__all__ = ["NoTarget", "RecreatePod", "RestartPod", "RestartWorkload", "pod_view"]


def _pod(situation: Situation) -> dict[str, Any]:
    return situation.findings.pod or {}


def pod_view(situation: Situation) -> dict[str, Any] | Step | None:
    """The failing Pod as `kubernetes_get` returned it, else the read (None: no Pod)."""
    pod = _pod(situation)
    if not pod:
        return None
    arguments = {"kind": "Pod", "namespace": pod["namespace"], "name": pod["name"]}
    view = situation.reads.returned(GET, arguments)
    return (GET, arguments) if view is None else view


class RestartPod(Evidence):
    def reads(self, situation: Situation) -> list[Step]:
        # The Pod's siblings: when they are Ready, the template works and what failed
        # is this Pod's runtime state.
        workload = situation.findings.workload or {}
        selector = workload.get("selector") or {}
        return situation.reads.labelled("Pod", workload.get("namespace", ""), selector, 20)

    def values(self, situation: Situation) -> Values | Objection:
        pod = _pod(situation)
        if not pod:
            return Objection("no Pod was read")
        values = target_values("Pod", pod["namespace"])
        values["pod"] = pod["name"]
        return values


class RecreatePod(RestartPod):
    def reads(self, situation: Situation) -> list[Step]:
        return pending(pod_view(situation))

    def values(self, situation: Situation) -> Values | Objection:
        values = super().values(situation)
        view = pod_view(situation)
        if isinstance(values, Objection) or not isinstance(view, dict):
            return values
        policy = str(view.get("restartPolicy") or "Always")
        if view.get("phase") == "Failed" and policy == "Never":
            values["restart_policy"] = "OnFailure"
        return values


class RestartWorkload(Evidence):
    def values(self, situation: Situation) -> Values | Objection:
        workload = situation.findings.workload or {}
        if not workload:
            return Objection("no workload was read")
        values = target_values(str(workload["kind"]), workload["namespace"])
        values["workload"] = workload["name"]
        return values


class NoTarget(Evidence):
    """A cluster-wide action that takes nothing from the evidence (evicted Pods' clean-up,
    a read-only snapshot)."""

    def values(self, situation: Situation) -> Values | Objection:
        return {"namespace": situation.namespace} if situation.namespace else {}
