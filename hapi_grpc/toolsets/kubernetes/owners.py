"""`kubernetes_owner_chain`: from a Pod (or any object) up to what should be remediated.

Design notes: docs/internals.md (`toolsets/kubernetes/owners.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hapi_grpc.adapters.kubernetes.reader import KubeFailure, KubeFailureKind, ResourceType
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult
from hapi_grpc.toolsets.kubernetes.args import KubernetesOwnerChainArgs
from hapi_grpc.toolsets.kubernetes.facts import controller_ref, record_object
from hapi_grpc.toolsets.kubernetes.scope import ScopeRefusal
from hapi_grpc.toolsets.kubernetes.session import KubernetesSession, guarded
from hapi_grpc.toolsets.kubernetes.summaries import list_line
from hapi_grpc.toolsets.kubernetes.views import object_view

__all__ = ["OWNERS_TOOL", "KubernetesOwnerChain", "resource_ref"]

OWNERS_TOOL = "kubernetes_owner_chain"
_MAX_LINKS = 5
_MAX_REVISIONS = 20  # more than a Deployment's default revisionHistoryLimit (10)


def resource_ref(rtype: ResourceType, namespace: str | None, name: str) -> str:
    """ADR-038's `namespace/group/Kind/name`; the namespace is empty when cluster-scoped."""
    where = namespace if rtype.namespaced and namespace else ""
    return f"{where}/{rtype.group_label}/{rtype.kind}/{name}"


@dataclass(frozen=True)
class KubernetesOwnerChain:
    session: KubernetesSession
    name: str = OWNERS_TOOL
    description: str = (
        "Follow owner references from an object (default kind Pod) up to the workload that"
        " manages it (ReplicaSet -> Deployment, StatefulSet, DaemonSet, Job -> CronJob), plus a"
        " Pod's Node. Returns remediation_target as namespace/group/Kind/name."
    )
    arguments: type[KubernetesOwnerChainArgs] = KubernetesOwnerChainArgs

    @guarded
    async def run(self, args: KubernetesOwnerChainArgs, ctx: ToolContext) -> ToolResult:
        session = self.session
        rtype = await session.resolve(args.kind, args.namespace, ctx)
        namespace = args.namespace if rtype.namespaced else None
        obj = await session.reader.get(rtype, namespace, args.name, ctx.timeout)
        obj.setdefault("kind", rtype.kind)
        if ctx.observed is not None:
            record_object(ctx.observed, obj)
        chain = [{"ref": resource_ref(rtype, namespace, args.name), "status": list_line(obj)}]
        target = chain[0]["ref"]
        start, notes = obj, []
        for _ in range(_MAX_LINKS):
            owner = controller_ref(obj.get("metadata") or {})
            if owner is None:
                break
            spelled = f"{owner.get('apiVersion')}/{owner.get('kind')}"
            try:
                session.scope.check_kind(spelled)
                otype = await session.reader.resolve(spelled, ctx.timeout)
                obj = await session.reader.get(
                    otype,
                    namespace if otype.namespaced else None,
                    str(owner.get("name")),
                    ctx.timeout,
                )
            except ScopeRefusal as refusal:
                notes.append(f"owner {spelled}/{owner.get('name')} not read: {refusal.message}")
                break
            except KubeFailure as failure:
                if failure.kind is KubeFailureKind.TIMEOUT:
                    raise
                notes.append(f"owner {spelled}/{owner.get('name')} not read: {failure.message}")
                break
            obj.setdefault("kind", otype.kind)
            if ctx.observed is not None:
                record_object(ctx.observed, obj)
            ref = resource_ref(otype, namespace, str(owner.get("name")))
            chain.append({"ref": ref, "status": list_line(obj)})
            target = ref
        data: dict[str, Any] = {
            "kind": "OwnerChain",
            "chain": chain,
            "remediation_target": target,
        }
        if rtype.kind == "Pod":
            node = await self._node(start, ctx, notes)
            if node is not None:
                data["node"] = node
        if obj.get("kind") == "Deployment":
            revisions = await self._revisions(obj, ctx, notes)
            if revisions:
                data["revisions"] = revisions
        if notes:
            data["notes"] = notes
        if ctx.observed is not None:
            ctx.observed.add_owner_chain(
                rtype.kind, namespace, args.name, [str(link["ref"]) for link in chain]
            )
        return session.answer(data)

    async def _revisions(
        self, deployment: dict[str, Any], ctx: ToolContext, notes: list[str]
    ) -> list[str]:
        """The Deployment's ReplicaSets, newest revision first, one line each."""
        meta = deployment.get("metadata") or {}
        labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if not labels:
            return []
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        try:
            rstype = await self.session.reader.resolve("apps/v1/ReplicaSet", ctx.timeout)
            self.session.scope.check_kind(rstype.kind)
            found = await self.session.reader.list(
                rstype,
                meta.get("namespace"),
                ctx.timeout,
                label_selector=selector,
                limit=_MAX_REVISIONS,
            )
        except (ScopeRefusal, KubeFailure) as exc:
            notes.append(f"revisions of {meta.get('name')} not read: {exc.message}")
            return []
        owned = [
            i
            for i in found.get("items") or []
            if isinstance(i, dict)
            and any(
                r.get("kind") == "Deployment" and r.get("name") == meta.get("name")
                for r in (i.get("metadata") or {}).get("ownerReferences") or []
            )
        ]
        for item in owned:
            item.setdefault("kind", "ReplicaSet")
            if ctx.observed is not None:
                record_object(ctx.observed, item)

        def revision(item: dict[str, Any]) -> int:
            text = ((item.get("metadata") or {}).get("annotations") or {}).get(
                "deployment.kubernetes.io/revision", ""
            )
            return int(text) if isinstance(text, str) and text.isdigit() else 0

        def images(item: dict[str, Any]) -> str:
            template = ((item.get("spec") or {}).get("template") or {}).get("spec") or {}
            found = [str(c.get("image", "")) for c in template.get("containers") or []]
            return ",".join(found)[:300]

        owned.sort(key=revision, reverse=True)
        return [f"revision {revision(i)}: {list_line(i)} images={images(i)}" for i in owned]

    async def _node(
        self, pod: dict[str, Any], ctx: ToolContext, notes: list[str]
    ) -> dict[str, Any] | None:
        name = (pod.get("spec") or {}).get("nodeName")
        if not name:
            notes.append("the pod is not scheduled to a node")
            return None
        try:
            ntype = await self.session.reader.resolve("v1/Node", ctx.timeout)
            self.session.scope.check_kind(ntype.kind)
            raw = await self.session.reader.get(ntype, None, name, ctx.timeout)
            if ctx.observed is not None:
                record_object(ctx.observed, raw, "Node")
            node = object_view(raw)
        except (ScopeRefusal, KubeFailure) as exc:
            notes.append(f"node {name} not read: {exc.message}")
            return None
        keep = ("name", "ready", "conditions", "pressure", "unschedulable", "taints")
        return {"ref": f"/core/Node/{name}", **{k: node[k] for k in keep if k in node}}
