"""What the built-in analyst reads from the cluster before it searches the catalog.

Used only when the `kubernetes` tools are offered. Each call of `plan` looks
at the reads so far (`builtin_reads`) and returns the next read, or the
`Findings` once there is nothing more to read:

- the reported workload (its selector), its Pods (the worst one) and what
  the Pod's worst container shows (`builtin_pod_evidence`);
- a Node's conditions and taints for a node signal; any other kind's conditions;
- a GitOps controller's label or annotation on the object;
- the owner chain, whose top is the resource to remediate (or the Pod's
  Node when it is not Ready; a Ready Node's pressure is cited too).

Each step is a function that returns either the read it still needs or the
`Findings` of its part; `plan` runs them in order and adds the parts up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hapi_grpc.adapters.llm.builtin_pod_evidence import pod_evidence, worst_pod
from hapi_grpc.adapters.llm.builtin_reads import (
    GET,
    OWNERS,
    Exchange,
    Findings,
    Reads,
    Step,
    condition_text,
    exchanges,
)
from hapi_grpc.domain.observed import Observed

__all__ = ["GET", "Findings", "exchanges", "plan"]

_WORKLOADS = frozenset({"deployment", "statefulset", "daemonset", "replicaset"})
# Labels and annotations Argo CD and Flux put on the objects they sync.
_GITOPS_PREFIXES = ("argoproj.io/", "fluxcd.io/")
_GITOPS_MANAGERS = frozenset({"argocd", "argo-cd", "flux", "fluxcd", "kustomize-controller"})

Stage = Callable[[], Step | Findings]


def plan(
    kind: str,
    namespace: str,
    name: str,
    signal: str,
    exchanges: Sequence[Exchange],
    observed: Observed,
) -> Step | Findings:
    """The next read, or the findings when the evidence is complete."""
    reads = Reads(exchanges, observed)
    lowered = kind.lower()
    if lowered == "node":
        return _node(reads, name)
    if lowered == "pod":
        return _in_order(
            lambda: pod_evidence(reads, namespace, name),
            lambda: _owners(reads, namespace, "Pod", name),
        )
    if lowered not in _WORKLOADS:
        return _in_order(
            lambda: _other(reads, kind, namespace, name),
            lambda: _owners(reads, namespace, kind, name),
        )
    workload = _workload(reads, kind, namespace, name)
    if isinstance(workload, tuple):
        return workload
    pod = worst_pod(reads, kind, namespace, name, signal)
    if isinstance(pod, tuple):
        return pod
    if pod is None:
        return _in_order(lambda: workload, lambda: _owners(reads, namespace, kind, name))
    return _in_order(
        lambda: workload,
        lambda: pod_evidence(reads, namespace, pod),
        lambda: _owners(reads, namespace, "Pod", pod),
    )


def _in_order(*stages: Stage) -> Step | Findings:
    """The first read a stage still needs, or all their findings added up."""
    found = Findings()
    for stage in stages:
        part = stage()
        if isinstance(part, tuple):
            return part
        found = found.plus(part)
    return found


# --- the objects reported ------------------------------------------------------------


def _node(reads: Reads, name: str) -> Step | Findings:
    node = reads.got("Node", None, name)
    if isinstance(node, tuple):
        return node
    if not node:
        return Findings()
    label = f"Node {name}"
    taints = tuple(f"{label} spec.taints {_taint(t)}" for t in node.get("taints", []))
    return Findings(
        evidence=_condition_evidence(label, node["conditions"]) + taints,
        target=f"/core/Node/{name}",
    )


def _workload(reads: Reads, kind: str, namespace: str, name: str) -> Step | Findings:
    workload = reads.got(kind, namespace, name)
    if isinstance(workload, tuple):
        return workload
    label = f"{kind} {namespace}/{name}"
    replicas = workload.get("replicas")
    shown = (f"{label} status.replicas {replicas}",) if replicas else ()
    return Findings(evidence=_gitops_evidence(label, workload) + shown)


def _other(reads: Reads, kind: str, namespace: str, name: str) -> Step | Findings:
    """Any other kind: its conditions, and whether a GitOps controller manages it."""
    obj = reads.got(kind, namespace, name)
    if isinstance(obj, tuple):
        return obj
    label = f"{kind} {namespace}/{name}"
    return Findings(
        evidence=_condition_evidence(label, obj.get("conditions", []))
        + _gitops_evidence(label, obj)
    )


# --- the owner chain -------------------------------------------------------------------


def _owners(reads: Reads, namespace: str, kind: str, name: str) -> Step | Findings:
    """The resource to remediate (the chain's top, or a NotReady Node) and Node pressure."""
    arguments: dict[str, Any] = {"kind": kind, "name": name}
    if namespace:
        arguments["namespace"] = namespace
    chain = reads.returned(OWNERS, arguments)
    if chain is None:
        return OWNERS, arguments
    found = Findings(target=str(chain.get("remediation_target", "")))
    node_name = str((chain.get("node") or {}).get("name", ""))
    node = reads.object("Node", "", node_name) if node_name else {}
    if not node:
        return found
    label = f"Node {node_name}"
    if node.get("ready") != "True":
        cited = Findings(
            evidence=_condition_evidence(label, node["conditions"]),
            target=f"/core/Node/{node_name}",
        )
        return found.plus(cited)
    if _pressure(node["conditions"]):
        # The node is Ready but under pressure: a cause the Pod cannot show.
        return found.plus(Findings(evidence=_condition_evidence(label, node["conditions"])))
    return found


# --- conditions, taints, GitOps ----------------------------------------------------------


def _pressure(conditions: Iterable[dict[str, str]]) -> list[str]:
    """Pressure conditions that are not False (DiskPressure, MemoryPressure)."""
    return [c["type"] for c in conditions if "Pressure" in c["type"] and c["status"] != "False"]


def _condition_evidence(label: str, conditions: Iterable[dict[str, str]]) -> tuple[str, ...]:
    """Conditions worth citing: Ready that is not True, a pressure that is True."""
    return tuple(
        f"{label} status.conditions {condition_text(c)}"
        for c in conditions
        if (c["type"] == "Ready" and c["status"] != "True")
        or ("Pressure" in c["type"] and c["status"] == "True")
    )


def _taint(taint: dict[str, str]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key', '')}{value}:{taint.get('effect', '')}"


def _gitops_evidence(label: str, obj: dict[str, Any]) -> tuple[str, ...]:
    """The first label or annotation naming a GitOps controller (Argo CD, Flux)."""
    for section in ("labels", "annotations"):
        for key, value in (obj.get(section) or {}).items():
            managed = key == "app.kubernetes.io/managed-by" and value.lower() in _GITOPS_MANAGERS
            if managed or _gitops_key(key):
                return (f"{label} metadata.{section}[{key}]={value} (managed by GitOps)",)
    return ()


def _gitops_key(key: str) -> bool:
    """`argoproj.io/...`, `fluxcd.io/...` and their subdomains (`kustomize.toolkit.fluxcd.io/`)."""
    prefix = key.lower().partition("/")[0] + "/"
    return any(prefix == p or prefix.endswith("." + p) for p in _GITOPS_PREFIXES)
