"""RollbackDeployment: return a Deployment to an earlier revision of its pod template.

Design notes: docs/internals.md (`analyst/actions/rollback.py`).
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.conversation import Step
from hapi_grpc.analyst.runtime_errors import PullFailure

__all__ = ["Rollback", "revision_of"]

# A rollout that served this long after completing was a healthy release (seconds).
_SUSTAINED = 1800.0
_PODS_LISTED = 50


def revision_of(obj: dict[str, Any]) -> int | None:
    revision = obj.get("revision")
    return revision if isinstance(revision, int) and revision > 0 else None


class Rollback(Evidence):
    def _deployment(self, situation: Situation) -> dict[str, Any]:
        workload = situation.findings.workload or {}
        return workload if workload.get("kind") == "Deployment" else {}

    def reads(self, situation: Situation) -> list[Step]:
        """The Deployment's ReplicaSets, then every Pod it runs (all revisions): whether
        earlier revisions fail too is what says the failure came with the rollout."""
        deployment = self._deployment(situation)
        selector = deployment.get("selector") or {}
        if not selector:
            return []
        for kind, limit in (("ReplicaSet", 20), ("Pod", _PODS_LISTED)):
            needed = situation.reads.labelled(kind, deployment["namespace"], selector, limit)
            if needed:
                return needed
        return []

    def _revisions(self, deployment: dict[str, Any], situation: Situation) -> list[dict[str, Any]]:
        """The Deployment's ReplicaSets read, newest revision first."""
        owned = [
            rs
            for rs in situation.reads.objects("ReplicaSet", deployment["namespace"])
            if any(o == {"kind": "Deployment", "name": deployment["name"]} for o in rs["owners"])
            and revision_of(rs) is not None
        ]
        return sorted(owned, key=lambda rs: revision_of(rs) or 0, reverse=True)

    def values(self, situation: Situation) -> Values | Objection:
        deployment = self._deployment(situation)
        if not deployment:
            return Objection("no Deployment was found to roll back")
        if situation.findings.missing:
            kind, name = situation.findings.missing
            return Objection(f"a container waits on {kind} {name}, which no revision creates")
        pull = situation.findings.pull
        if pull is not None and pull not in (PullFailure.NOT_FOUND, PullFailure.INVALID_NAME):
            return Objection(
                f"the image pull fails because {pull.value}: another revision's image is pulled"
                " the same way, so a rollback is shown to help only when the reference itself is"
                " wrong (a missing tag or name)"
            )
        current = revision_of(deployment)
        if current is None:
            return Objection(f"Deployment {deployment['name']} shows no revision number")
        now = deployment.get("template_hash", "")
        refs = sorted((r["kind"], r["name"]) for r in deployment.get("config_refs", []))
        earlier = [
            rs for rs in self._revisions(deployment, situation) if (revision_of(rs) or 0) < current
        ]
        if not earlier:
            return Objection(f"no earlier revision of Deployment {deployment['name']} was read")
        shared = self._earlier_failure(deployment, earlier, situation)
        if shared:
            return Objection(shared)
        differing = [rs for rs in earlier if rs.get("template_hash") != now]
        if not differing:
            return Objection(
                f"every earlier revision read runs the same pod template as revision {current}"
                " (a restart only): a rollback would redeploy it"
            )
        target = differing[0]
        kept = sorted((r["kind"], r["name"]) for r in target.get("config_refs", [])) == refs
        if situation.findings.config_error and refs and kept:
            named = ", ".join(f"{k} {n}" for k, n in refs)
            return Objection(
                "the crashed container's log blames its configuration, which comes from"
                f" {named}; revision {revision_of(target)} reads the same objects, and a"
                " rollback does not revert them"
            )
        values = target_values("Deployment", deployment["namespace"])
        values.update(workload=deployment["name"], revision=revision_of(target))
        return values

    def _earlier_failure(
        self, deployment: dict[str, Any], earlier: list[dict[str, Any]], situation: Situation
    ) -> str:
        """Why the failure did not come with the latest rollout ("" when nothing says so):
        a Pod of an earlier revision fails too, or the rollout completed and the Pods'
        failures were first seen long after (the template served before failing)."""
        namespace = deployment["namespace"]
        names = {rs["name"] for rs in earlier}
        for pod in situation.reads.objects("Pod", namespace):
            owner = pod.get("controller", {}).get("name", "")
            if owner in names and any(_failing(c) for c in pod.get("containers", [])):
                return (
                    f"Pod {pod['name']} of an earlier revision ({owner}) fails too: the failure"
                    " did not begin with the latest rollout, and a rollback keeps it"
                )
        completed = (deployment.get("rollout") or {}).get("completed_at") or 0.0
        owned = {rs["name"] for rs in self._revisions(deployment, situation)}
        for event in situation.reads.observed.events:
            if event["kind"] != "Pod" or event["namespace"] != namespace:
                continue
            if not (event["type"] == "Warning" or event["reason"] == "BackOff"):
                continue
            owner = next((n for n in owned if event["name"].startswith(n + "-")), "")
            if owner in names:
                return (
                    f"{event['reason']} on Pod {event['name']} of an earlier revision ({owner}):"
                    " the failure is not the latest revision's own"
                )
            if owner and completed and event["first_at"] > completed + _SUSTAINED:
                return (
                    f"the rollout completed at {int(completed)} and {event['reason']} on Pod"
                    f" {event['name']} was first seen at {int(event['first_at'])}: the template"
                    " served before it failed, so the failure did not come with the release"
                )
        return ""


def _failing(container: dict[str, Any]) -> bool:
    last = container.get("last_termination") or {}
    return container.get("state_reason", "") in _FAILING or (
        container.get("restarts", 0) > 0
        and (last.get("exit_code", -1) > 0 or last.get("reason") == "OOMKilled")
    )


_FAILING = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerError",
        "RunContainerError",
    }
)
