"""The general reads: from the reported resource to the Pod, container and Node that show
the failure, and the resource to remediate.

Design notes: docs/internals.md (`analyst/evidence.py`).
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.conversation import OWNERS, Reads, Step
from hapi_grpc.analyst.findings import Findings
from hapi_grpc.analyst.pods import pod_evidence, worst_pod
from hapi_grpc.analyst.subject import Subject
from hapi_grpc.analyst.wording import condition_lines, gitops_marks, taint_text

__all__ = ["plan"]

_WORKLOADS = frozenset({"deployment", "statefulset", "daemonset", "replicaset"})
_PODS_LISTED = 20

Plan = list[Step] | Findings


def plan(subject: Subject, reads: Reads) -> Plan:
    """The reads still needed, or the findings when the general evidence is complete."""
    kind, namespace, name = subject.kind, subject.namespace, subject.name
    lowered = kind.lower()
    if lowered == "node":
        return _node(reads, name)
    if lowered == "pod":
        return _pod(subject, reads, namespace, name)
    obj = reads.got(kind, namespace, name)
    if isinstance(obj, tuple):
        return [obj]
    label = f"{kind} {namespace}/{name}"
    found = Findings(evidence=gitops_marks(label, obj) + _replicas(label, obj))
    if lowered not in _WORKLOADS:
        found = found.plus(Findings(evidence=condition_lines(label, obj.get("conditions", []))))
        return _then(found, _owners(reads, namespace, kind, name))
    found = found.plus(Findings(workload=obj))
    selector = obj.get("selector") or {}
    listing = reads.labelled("Pod", namespace, selector, _PODS_LISTED)
    if listing:
        return listing
    pod = worst_pod(reads.pods(namespace, selector), subject)
    if pod is None:
        return _then(found, _owners(reads, namespace, kind, name))
    return _then(found, _pod(subject, reads, namespace, str(pod["name"])))


def _then(first: Findings, later: Plan) -> Plan:
    return later if isinstance(later, list) else first.plus(later)


def _replicas(label: str, obj: dict[str, Any]) -> tuple[str, ...]:
    replicas = obj.get("replicas")
    return (f"{label} status.replicas {replicas}",) if replicas else ()


def _pod(subject: Subject, reads: Reads, namespace: str, name: str) -> Plan:
    """The Pod's owner chain (the Pod, its owners, its Node), then what it shows."""
    owners = _owners(reads, namespace, "Pod", name)
    if isinstance(owners, list):
        return owners
    pod = reads.object("Pod", namespace, name)
    if not pod:
        return owners
    node = owners.node or {}
    if pod.get("reason") == "Evicted" and node.get("pressure"):
        # The kubelet evicted the Pod to relieve its Node: the Node is what to remediate.
        pressure = ",".join(node["pressure"])
        evicted = (
            f"Pod {namespace}/{name} status.reason=Evicted by Node {node['name']} ({pressure})"
        )
        owners = owners.plus(Findings(evidence=(evicted,), target=f"/core/Node/{node['name']}"))
    shown = pod_evidence(reads, pod, subject)
    return _then(owners.plus(Findings(pod=pod)), shown)


def _node(reads: Reads, name: str) -> Plan:
    node = reads.got("Node", None, name)
    if isinstance(node, tuple):
        return [node]
    if not node:
        return Findings()
    label = f"Node {name}"
    taints = tuple(f"{label} spec.taints {taint_text(t)}" for t in node.get("taints", []))
    return Findings(
        evidence=condition_lines(label, node["conditions"]) + taints,
        target=f"/core/Node/{name}",
        node=node,
    )


def _owners(reads: Reads, namespace: str, kind: str, name: str) -> Plan:
    """The resource to remediate (the chain's top, or a NotReady Node) and the Node read."""
    arguments: dict[str, Any] = {"kind": kind, "name": name}
    if namespace:
        arguments["namespace"] = namespace
    chain = reads.returned(OWNERS, arguments)
    if chain is None:
        return [(OWNERS, arguments)]
    found = Findings(target=str(chain.get("remediation_target", "")))
    refs = [str(link.get("ref", "")) for link in chain.get("chain") or [] if isinstance(link, dict)]
    top = refs[-1].split("/") if refs else []
    if len(top) == 4 and top[2] in ("Deployment", "StatefulSet", "DaemonSet"):
        workload = reads.object(top[2], top[0], top[3])
        found = found.plus(Findings(workload=workload or None))
    node_name = str((chain.get("node") or {}).get("name", ""))
    node = reads.object("Node", "", node_name) if node_name else {}
    if not node:
        return found
    label = f"Node {node_name}"
    cited = condition_lines(label, node["conditions"])
    if node.get("ready") != "True":
        return found.plus(Findings(evidence=cited, target=f"/core/Node/{node_name}", node=node))
    return found.plus(Findings(evidence=cited, node=node))
