"""The built-in analyst's evidence about a Pod: which Pod of a workload looks worst,
and what its worst container shows (see `builtin_evidence`).

- OOMKilled from the last termination state and the memory limit it hit;
- a crash loop with the exit code and the previous container's last log lines
  (and a line the service's record found blaming the configuration);
- an image that cannot be pulled and a Pending Pod from the waiting state and
  the Pod's warning events (for a Pending Pod whose events expired, its
  PodScheduled=False condition); a liveness probe that killed the container.
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.adapters.llm.builtin_reads import (
    EVENTS,
    LIST,
    LOGS,
    Findings,
    Reads,
    Step,
    condition_text,
)
from hapi_grpc.domain.observed import Observed

__all__ = ["pod_evidence", "worst_pod"]

_IMAGE_PULL_REASONS = frozenset({"ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull"})
_PROBE_FAILURE = ("liveness probe failed", "failed liveness probe")
_LOG_LINES = 3
_EVENTS_CITED = 3


def worst_pod(reads: Reads, kind: str, namespace: str, name: str, signal: str) -> Step | str | None:
    """The workload's Pod that looks worst (see `_badness`), once they were listed."""
    selector = reads.object(kind, namespace, name).get("selector") or {}
    if not selector:
        return None
    arguments = {
        "kind": "Pod",
        "namespace": namespace,
        "label_selector": ",".join(f"{k}={v}" for k, v in selector.items()),
        "limit": 20,
    }
    if reads.returned(LIST, arguments) is None:
        return LIST, arguments
    pods = reads.pods(namespace, selector)
    if not pods:
        return None
    return str(max(pods, key=lambda pod: _badness(pod, signal))["name"])


def _badness(pod: dict[str, Any], signal: str) -> tuple[bool, bool, int]:
    """Ranks Pods: one showing the signal's reason, then one in trouble, then restarts."""
    containers = pod.get("containers", [])
    reasons = [r for c in containers for r in (_reason(c), _last(c).get("reason", "")) if r]
    shows_signal = bool(signal) and any(signal.lower() in r.lower() for r in reasons)
    troubled = bool(reasons) or pod.get("phase") == "Pending"
    return shows_signal, troubled, sum(c["restarts"] for c in containers)


def pod_evidence(reads: Reads, namespace: str, name: str) -> Step | Findings:
    """What the Pod's worst container shows, and the reads that explain it."""
    pod = reads.got("Pod", namespace, name)
    if isinstance(pod, tuple):
        return pod
    container = _worst_container(pod)
    where = f"Pod {namespace}/{name} container {container.get('name', '')}"
    found = Findings(pod=f"{namespace}/{name}", container=str(container.get("name", "")))
    oom = _oom_killed(container)
    crash_loop = not oom and _crash_looping(container)
    if oom:
        found = found.plus(_oom_evidence(where, container))
    if crash_loop:
        crash = _crash_evidence(reads, namespace, name, where, container)
        if isinstance(crash, tuple):
            return crash
        found = found.plus(crash)
    elif not _cannot_start(pod, container):
        return found
    elif container.get("state") == "waiting":
        found = found.plus(Findings(evidence=(f"{where} state={_state(container)}",)))
    events = _event_evidence(reads, namespace, name, pod)
    return events if isinstance(events, tuple) else found.plus(events)


def _worst_container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = pod.get("containers", [])
    if not containers:
        return {}
    return max(containers, key=lambda c: (not c["ready"], c["restarts"]))


def _reason(container: dict[str, Any]) -> str:
    return str(container.get("state_reason", ""))


def _last(container: dict[str, Any]) -> dict[str, Any]:
    """The container's last termination ({} when it never terminated)."""
    last = container.get("last_termination") or {}
    return last if last.get("reason") or last.get("exit_code", -1) >= 0 else {}


def _oom_killed(container: dict[str, Any]) -> bool:
    return _last(container).get("reason") == "OOMKilled"


def _crash_looping(container: dict[str, Any]) -> bool:
    return _reason(container) == "CrashLoopBackOff" or bool(
        _last(container) and container.get("restarts")
    )


def _cannot_start(pod: dict[str, Any], container: dict[str, Any]) -> bool:
    """An image that cannot be pulled, or a Pod not placed or started yet."""
    return _reason(container) in _IMAGE_PULL_REASONS or pod.get("phase") == "Pending"


def _state(container: dict[str, Any]) -> str:
    """`waiting CrashLoopBackOff: back-off ...` from the recorded state."""
    text = " ".join(p for p in (container.get("state", ""), _reason(container)) if p)
    message = container.get("state_message", "")
    return f"{text}: {message}" if message else text


def _oom_evidence(where: str, container: dict[str, Any]) -> Findings:
    last = _last(container)
    limit = str(container.get("limits", {}).get("memory", ""))
    return Findings(
        evidence=(
            f"{where} lastState.terminated.reason=OOMKilled exitCode={last['exit_code']}"
            f" at {last.get('finished') or '?'}; resources.limits.memory={limit or 'none'};"
            f" restartCount={container.get('restarts', 0)}",
        ),
        memory_limit=limit,
    )


def _crash_evidence(
    reads: Reads, namespace: str, pod: str, where: str, container: dict[str, Any]
) -> Step | Findings:
    """The crash and the previous container's last log lines (and any blaming the config)."""
    name = str(container.get("name", ""))
    arguments = {"namespace": namespace, "pod": pod, "container": name, "previous": True}
    log = reads.returned(LOGS, arguments)
    if log is None:
        return LOGS, {**arguments, "tail_lines": 20}
    last = _last(container)
    crash = (
        f"{where} state={_state(container)}; lastState.terminated.exitCode="
        f"{last.get('exit_code')} reason={last.get('reason')};"
        f" restartCount={container.get('restarts', 0)}"
    )
    lines = [str(line) for line in log.get("lines") or []][-_LOG_LINES:]
    ends = (f"{where} previous log ends: {' | '.join(lines)}",) if lines else ()
    blamed = _config_errors(reads.observed, namespace, pod, name)
    return Findings(
        evidence=(crash, *ends),
        config_error=f"{where} previous log: {blamed[0][:200]}" if blamed else "",
    )


def _config_errors(observed: Observed, namespace: str, pod: str, container: str) -> list[str]:
    """The previous-log lines the record found blaming the configuration."""
    return [
        line
        for log in observed.logs
        if (log["namespace"], log["pod"], log["container"], log["previous"])
        == (namespace, pod, container, True)
        for line in log["config_errors"]
    ]


def _event_evidence(
    reads: Reads, namespace: str, name: str, pod: dict[str, Any]
) -> Step | Findings:
    """The Pod's warning events; without any, why the scheduler left it Pending."""
    arguments = {"namespace": namespace, "kind": "Pod", "name": name}
    events = reads.returned(EVENTS, arguments)
    if events is None:
        return EVENTS, {**arguments, "limit": 10}
    label = f"Pod {namespace}/{name}"
    warnings = [
        e for e in events.get("events") or [] if isinstance(e, dict) and e.get("type") == "Warning"
    ]
    if not warnings:
        # Events expire (an hour by default); a Pod Pending for longer keeps the
        # scheduler's verdict only in its PodScheduled condition.
        return Findings(evidence=_unscheduled_evidence(label, pod))
    cited = tuple(
        f"Event on {label}: {e.get('reason')} x{e.get('count')}"
        f" (last {e.get('last_seen')}): {e.get('message')}"
        for e in warnings[:_EVENTS_CITED]
    )
    probe = next((e for e in warnings if _probe_failed(e)), None)
    killed = (
        f"Event on {label}: {probe.get('reason')} x{probe.get('count')}:"
        f" {str(probe.get('message'))[:200]}"
        if probe is not None
        else ""
    )
    return Findings(evidence=cited, probe_failure=killed)


def _probe_failed(event: dict[str, Any]) -> bool:
    message = str(event.get("message")).lower()
    return any(words in message for words in _PROBE_FAILURE)


def _unscheduled_evidence(label: str, pod: dict[str, Any]) -> tuple[str, ...]:
    """A Pending Pod's PodScheduled=False condition (reason and the scheduler's message)."""
    if pod.get("phase") != "Pending":
        return ()
    return tuple(
        f"{label} status.conditions {condition_text(c)}"
        for c in pod.get("conditions", [])
        if (c["type"], c["status"]) == ("PodScheduled", "False")
    )
