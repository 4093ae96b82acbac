"""What the built-in analyst reads from the cluster before it searches the catalog.

Used only when the `kubernetes` tools are offered. Like a language model, it
reads through the tools and works only from their results in the
conversation; each call of `plan` looks at the reads so far and returns the
next read, or the `Findings` once there is nothing more to read:

- the reported workload (its selector), its Pods (the worst one), the Pod's
  containers: OOMKilled from the last termination state and the limit it hit;
  CrashLoopBackOff with the exit code and the previous container's last log
  lines; ImagePullBackOff and Pending from the waiting message and events
  (for a Pending Pod whose events expired, its PodScheduled=False condition);
- a Node's conditions for a node signal; any other kind's conditions;
- the owner chain, whose top is the resource to remediate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import re2

__all__ = ["Findings", "plan"]

GET, LIST, EVENTS, LOGS, OWNERS = (
    "kubernetes_get",
    "kubernetes_list",
    "kubernetes_events",
    "kubernetes_pod_logs",
    "kubernetes_owner_chain",
)
_WORKLOADS = frozenset({"deployment", "statefulset", "daemonset", "replicaset"})
_RESTARTS_RE = re.compile(r"restarts=(\d+)")
_LOG_LINES = 3
# Labels and annotations Argo CD and Flux put on the objects they sync.
_GITOPS_KEY_RE = re.compile(r"(^|\.)(argoproj\.io|fluxcd\.io)/", re.IGNORECASE)
_GITOPS_MANAGERS = frozenset({"argocd", "argo-cd", "flux", "fluxcd", "kustomize-controller"})
# A previous-log line that blames the configuration (missing key, invalid setting).
_CONFIG_ERROR_RE = re2.compile(  # RE2: log lines are outside text (backtracking: 0.1 s/64 KB)
    r"(?i)\b(config(uration)?|settings?|env(ironment)? var(iable)?)\b.{0,80}"
    r"\b(missing|invalid|unknown|required|not set|malformed|cannot parse|parse error|bad)\b"
    r"|\b(missing|invalid|unknown|required|malformed)\b.{0,40}"
    r"\b(config(uration)?|settings?|env(ironment)? var(iable)?)\b",
)
_PROBE_FAILURE_RE = re.compile(r"liveness probe failed|failed liveness probe", re.IGNORECASE)


class Exchange(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> dict[str, Any]: ...

    @property
    def result(self) -> dict[str, Any]: ...


@dataclass
class Findings:
    """Evidence as `object field=value` lines, and the resource to remediate."""

    evidence: list[str] = field(default_factory=list)
    target: str = ""  # namespace/group/Kind/name
    memory_limit: str = ""
    pod: str = ""  # namespace/name of the Pod read and its worst container
    container: str = ""
    node: str = ""
    # Structured facts cited as evidence (the premises themselves are the catalog's).
    gitops: str = ""  # the label or annotation naming a GitOps controller
    crash_loop: bool = False
    config_error: str = ""  # the previous-log line blaming the configuration
    probe_failure: str = ""  # the event saying the liveness probe killed the container
    node_pressure: list[str] = field(default_factory=list)  # e.g. ["DiskPressure"]
    unschedulable: str = ""  # the scheduler's verdict on a Pending Pod

    def target_resource(self) -> dict[str, str] | None:
        parts = self.target.split("/")
        if len(parts) != 4:
            return None
        namespace, group, kind, name = parts
        return {
            "namespace": namespace,
            "kind": kind,
            "name": name,
            "api_group": "" if group == "core" else group,
        }


Step = tuple[str, dict[str, Any]]


def _read(exchanges: Sequence[Exchange], tool: str, **match: Any) -> dict[str, Any] | None:
    """The data of the last `tool` call whose arguments include `match`; {} on an error."""
    for exchange in reversed(exchanges):
        if exchange.name == tool and all(exchange.arguments.get(k) == v for k, v in match.items()):
            data = exchange.result.get("cluster_data")
            return data if isinstance(data, dict) else {}
    return None


def _worst_pod(lines: list[Any], signal: str) -> str | None:
    def score(line: str) -> tuple[int, int, int]:
        restarts = _RESTARTS_RE.search(line)
        return (
            int(bool(signal) and signal.lower() in line.lower()),
            int("status=" in line or "phase=Pending" in line),
            int(restarts.group(1)) if restarts else 0,
        )

    candidates = [line for line in lines if isinstance(line, str) and line]
    if not candidates:
        return None
    return max(candidates, key=score).split(" ", 1)[0]


def _conditions(label: str, data: dict[str, Any], findings: Findings) -> None:
    conditions = data.get("conditions") or (data.get("status") or {}).get("conditions") or []
    for condition in conditions:
        text = str(condition)
        head = text.split(" ", 1)[0]
        if head.startswith("Ready=") and head != "Ready=True":
            findings.evidence.append(f"{label} status.conditions {text}")
        elif not head.startswith("Ready=") and head.endswith("=True") and "Pressure" in head:
            findings.evidence.append(f"{label} status.conditions {text}")


def _pressure(node: dict[str, Any]) -> list[str]:
    """The node's pressure conditions that are not False (DiskPressure, MemoryPressure)."""
    return [str(p) for p in node.get("pressure") or [] if "Pressure" in str(p)]


def _gitops(label: str, data: dict[str, Any], findings: Findings) -> None:
    """Record a GitOps controller's label or annotation on an object read."""
    for section in ("labels", "annotations"):
        items = data.get(section)
        if not isinstance(items, dict):
            continue
        for key, value in items.items():
            managed = key == "app.kubernetes.io/managed-by" and str(value).lower() in (
                _GITOPS_MANAGERS
            )
            if (managed or _GITOPS_KEY_RE.search(str(key))) and not findings.gitops:
                findings.gitops = f"{label} metadata.{section}[{key}]={value}"
                findings.evidence.append(f"{findings.gitops} (managed by GitOps)")


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = [c for c in pod.get("containers") or [] if isinstance(c, dict)]
    if not containers:
        return {}
    return max(containers, key=lambda c: (not c.get("ready", True), c.get("restarts", 0)))


def _unscheduled(label: str, pod: dict[str, Any], findings: Findings) -> None:
    """Cite a Pending Pod's PodScheduled=False condition (reason and the scheduler's message)."""
    if pod.get("phase") != "Pending":
        return
    for condition in pod.get("conditions") or []:
        text = str(condition)
        if text.startswith("PodScheduled=False"):
            findings.evidence.append(f"{label} status.conditions {text}")
            findings.unschedulable = f"{label} {text}"[:300]


def _pod_evidence(
    namespace: str, name: str, exchanges: Sequence[Exchange], findings: Findings
) -> Step | None:
    pod = _read(exchanges, GET, kind="Pod", namespace=namespace, name=name)
    if pod is None:
        return GET, {"kind": "Pod", "namespace": namespace, "name": name}
    label = f"Pod {namespace}/{name}"
    container = _container(pod)
    cname = container.get("name", "")
    where = f"{label} container {cname}"
    state = str(container.get("state", ""))
    last = container.get("last_termination") or {}
    limit = (container.get("limits") or {}).get("memory", "")
    findings.node = str(pod.get("node", ""))
    findings.pod, findings.container = f"{namespace}/{name}", str(cname)
    if last.get("reason") == "OOMKilled":
        findings.evidence.append(
            f"{where} lastState.terminated.reason=OOMKilled exitCode={last.get('exit_code')}"
            f" at {last.get('finished', '?')}; resources.limits.memory={limit or 'none'};"
            f" restartCount={container.get('restarts', 0)}"
        )
        findings.memory_limit = str(limit)
    elif "CrashLoopBackOff" in state or (last and container.get("restarts", 0)):
        findings.crash_loop = True
        findings.evidence.append(
            f"{where} state={state}; lastState.terminated.exitCode={last.get('exit_code')}"
            f" reason={last.get('reason')}; restartCount={container.get('restarts', 0)}"
        )
        args = {"namespace": namespace, "pod": name, "container": cname, "previous": True}
        log = _read(exchanges, LOGS, **args)
        if log is None:
            return LOGS, {**args, "tail_lines": 20}
        lines = [str(line) for line in log.get("lines") or []][-_LOG_LINES:]
        if lines:
            findings.evidence.append(f"{where} previous log ends: {' | '.join(lines)}")
        every = [str(line) for line in log.get("lines") or []]
        blamed = next((line for line in every if _CONFIG_ERROR_RE.search(line)), "")
        if blamed:
            findings.config_error = f"{where} previous log: {blamed[:200]}"
    pulling = "ImagePull" in state or "ErrImage" in state or pod.get("phase") == "Pending"
    if pulling or findings.crash_loop:
        if "waiting" in state and not findings.crash_loop:
            findings.evidence.append(f"{where} state={state}")
        events = _read(exchanges, EVENTS, namespace=namespace, kind="Pod", name=name)
        if events is None:
            return EVENTS, {"namespace": namespace, "kind": "Pod", "name": name, "limit": 10}
        warnings = [e for e in events.get("events") or [] if e.get("type") == "Warning"]
        for event in warnings[:3]:
            findings.evidence.append(
                f"Event on {label}: {event.get('reason')} x{event.get('count')}"
                f" (last {event.get('last_seen')}): {event.get('message')}"
            )
            if event.get("reason") == "FailedScheduling" and not findings.unschedulable:
                findings.unschedulable = (
                    f"Event on {label}: FailedScheduling: {event.get('message')}"[:300]
                )
        if not warnings:
            # Events expire (an hour by default); a Pod Pending for longer keeps the
            # scheduler's verdict only in its PodScheduled condition.
            _unscheduled(label, pod, findings)
        probe = next((e for e in warnings if _PROBE_FAILURE_RE.search(str(e.get("message")))), None)
        if probe is not None:
            findings.probe_failure = (
                f"Event on {label}: {probe.get('reason')} x{probe.get('count')}:"
                f" {str(probe.get('message'))[:200]}"
            )
    return None


def _owner_chain(
    namespace: str | None, kind: str, name: str, exchanges: Sequence[Exchange], findings: Findings
) -> Step | None:
    args: dict[str, Any] = {"kind": kind, "name": name}
    if namespace:
        args["namespace"] = namespace
    chain = _read(exchanges, OWNERS, **args)
    if chain is None:
        return OWNERS, args
    findings.target = str(chain.get("remediation_target", ""))
    node = chain.get("node") or {}
    pressure = _pressure(node)
    if node and node.get("ready") not in (None, "True"):
        _conditions(f"Node {node.get('name')}", node, findings)
        findings.target = str(node.get("ref", findings.target))
    elif pressure:
        # The node is Ready but under pressure: a cause the Pod cannot show.
        _conditions(f"Node {node.get('name')}", node, findings)
    findings.node_pressure = pressure
    return None


def plan(
    kind: str, namespace: str, name: str, signal: str, exchanges: Sequence[Exchange]
) -> Step | Findings:
    """The next read, or the findings when the evidence is complete."""
    findings = Findings()
    lowered = kind.lower()
    if lowered == "node":
        node = _read(exchanges, GET, kind="Node", name=name)
        if node is None:
            return GET, {"kind": "Node", "name": name}
        _conditions(f"Node {name}", node, findings)
        findings.node_pressure = _pressure(node)
        for taint in node.get("taints") or []:
            findings.evidence.append(f"Node {name} spec.taints {taint}")
        if node:
            findings.target = f"/core/Node/{name}"
            findings.node = name
        return findings
    pod = name if lowered == "pod" else None
    if lowered in _WORKLOADS:
        workload = _read(exchanges, GET, kind=kind, namespace=namespace, name=name)
        if workload is None:
            return GET, {"kind": kind, "namespace": namespace, "name": name}
        _gitops(f"{kind} {namespace}/{name}", workload, findings)
        replicas = workload.get("replicas")
        if replicas:
            findings.evidence.append(f"{kind} {namespace}/{name} status.replicas {replicas}")
        selector = workload.get("selector")
        if selector:
            args = {"kind": "Pod", "namespace": namespace, "label_selector": selector, "limit": 20}
            pods = _read(exchanges, LIST, **args)
            if pods is None:
                return LIST, args
            pod = _worst_pod(pods.get("items") or [], signal)
    if pod:
        step = _pod_evidence(namespace, pod, exchanges, findings)
        if step is None:
            step = _owner_chain(namespace, "Pod", pod, exchanges, findings)
        return step if step is not None else findings
    if lowered not in _WORKLOADS:
        obj = _read(exchanges, GET, kind=kind, namespace=namespace, name=name)
        if obj is None:
            return GET, {"kind": kind, "namespace": namespace, "name": name}
        _conditions(f"{kind} {namespace}/{name}", obj, findings)
        _gitops(f"{kind} {namespace}/{name}", obj, findings)
    step = _owner_chain(namespace or None, kind, name, exchanges, findings)
    return step if step is not None else findings
