"""RollbackDeployment: return a Deployment to an earlier revision of its pod template.

Design notes: docs/internals.md (`analyst/actions/rollback.py`).
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.actions.base import Objection, Situation, Values, target_values
from hapi_grpc.analyst.conversation import LIST, Step
from hapi_grpc.analyst.runtime_errors import PullFailure

__all__ = ["Rollback", "revision_of"]


def revision_of(obj: dict[str, Any]) -> int | None:
    revision = obj.get("revision")
    return revision if isinstance(revision, int) and revision > 0 else None


class Rollback:
    def _deployment(self, situation: Situation) -> dict[str, Any]:
        workload = situation.findings.workload or {}
        return workload if workload.get("kind") == "Deployment" else {}

    def reads(self, situation: Situation) -> list[Step]:
        deployment = self._deployment(situation)
        selector = deployment.get("selector") or {}
        if not selector:
            return []
        arguments = {
            "kind": "ReplicaSet",
            "namespace": deployment["namespace"],
            "label_selector": ",".join(f"{k}={v}" for k, v in selector.items()),
        }
        if situation.reads.returned(LIST, arguments) is None:
            return [(LIST, {**arguments, "limit": 20})]
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
