"""What a Pod shows: which Pod of a workload looks worst, and what its worst container says.

- OOMKilled from the last termination and the memory limit it hit;
- a crash loop with its exit code and the previous container's last log lines (and
  a line the service's record found blaming the configuration);
- an image that cannot be pulled, a container that cannot be created or started and
  a Pending Pod, from the waiting state and the Pod's warning events (read by
  `runtime_errors`; for a Pending Pod whose events expired, its PodScheduled=False
  condition); a liveness probe that killed the container.

The events and the previous log are read in the same turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from hapi_grpc.analyst.conversation import EVENTS, LOGS, Reads, Step
from hapi_grpc.analyst.findings import IMAGE_PULL_REASONS, Findings, last_termination
from hapi_grpc.analyst.runtime_errors import missing_object, pull_failure, start_failure
from hapi_grpc.analyst.subject import Subject
from hapi_grpc.analyst.wording import condition_text

__all__ = ["liveness_kills", "pod_evidence", "previous_log", "worst_container", "worst_pod"]

E = TypeVar("E", bound=Mapping[str, Any])
_LOG_LINES = 3
_LOG_TAIL = 50
_EVENTS_READ = 20
_EVENTS_CITED = 3
_WAITING_FAILURES = IMAGE_PULL_REASONS | {
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "InvalidImageName",
}


def worst_pod(pods: list[dict[str, Any]], subject: Subject) -> dict[str, Any] | None:
    """The Pod the signal names, else the one that looks worst (see `_badness`)."""
    if not pods:
        return None
    named = [p for p in pods if subject.pod and p["name"] == subject.pod]
    return named[0] if named else max(pods, key=lambda pod: _badness(pod, subject))


def _badness(pod: dict[str, Any], subject: Subject) -> tuple[bool, bool, int]:
    """Ranks Pods: one showing the signal's reason, then one in trouble, then restarts."""
    containers = pod.get("containers", [])
    reasons = [
        r
        for c in containers
        for r in (c.get("state_reason", ""), last_termination(c).get("reason"))
        if r
    ]
    signal = subject.signal_type.lower()
    shows_signal = bool(signal) and any(signal in str(r).lower() for r in reasons)
    troubled = bool(reasons) or pod.get("phase") in ("Pending", "Failed")
    return shows_signal, troubled, sum(c["restarts"] for c in containers)


def worst_container(pod: dict[str, Any], name: str = "") -> dict[str, Any]:
    """The container named (the signal's label), else the least ready, most restarted one."""
    containers = [*pod.get("containers", []), *pod.get("init_containers", [])]
    named = [c for c in containers if name and c["name"] == name]
    if named:
        return named[0]
    main = pod.get("containers", [])
    return max(main, key=lambda c: (not c["ready"], c["restarts"])) if main else {}


def previous_log(reads: Reads, pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    """The previous-instance log of a container as the tool returned it (None: not read)."""
    return reads.returned(LOGS, _previous(pod, container))


def _previous(pod: dict[str, Any], container: str) -> dict[str, Any]:
    """The arguments of the read of a container's previous-instance log."""
    return {
        "namespace": pod["namespace"],
        "pod": pod["name"],
        "container": container,
        "previous": True,
    }


def liveness_kills(events: Iterable[E]) -> list[E]:
    """The kubelet's events saying a liveness probe failed or killed a container."""
    return [
        e
        for e in events
        if (e.get("reason") == "Unhealthy" and str(e.get("message", "")).startswith("Liveness"))
        or (e.get("reason") == "Killing" and "liveness probe" in str(e.get("message", "")))
    ]


def pod_evidence(reads: Reads, pod: dict[str, Any], subject: Subject) -> list[Step] | Findings:
    """What the Pod's worst container shows, and the reads that explain it."""
    namespace, name = pod["namespace"], pod["name"]
    container = worst_container(pod, subject.container)
    where = f"Pod {namespace}/{name} container {container.get('name', '')}"
    last = last_termination(container)
    crashed = bool(last) and bool(container.get("restarts"))
    waiting = container.get("state_reason", "") in _WAITING_FAILURES
    event_args = {"namespace": namespace, "kind": "Pod", "name": name}
    events = reads.returned(EVENTS, event_args)
    needed = reads.unread(EVENTS, event_args, limit=_EVENTS_READ)
    previous = _previous(pod, str(container.get("name", "")))
    if crashed:
        needed += reads.unread(LOGS, previous, tail_lines=_LOG_TAIL)
    if needed:
        return needed
    log = reads.returned(LOGS, previous) if crashed else {}
    found = Findings(container=container)
    if last.get("reason") == "OOMKilled":
        found = found.plus(_oom(where, container, last))
    elif crashed:
        found = found.plus(_crash(reads, where, pod, container, last, log or {}))
    if waiting or (container.get("state") == "waiting" and not crashed):
        found = found.plus(Findings(evidence=(f"{where} state={_state(container)}",)))
    warnings = [
        e
        for e in (events or {}).get("events") or []
        if isinstance(e, dict) and e.get("type") == "Warning"
    ]
    # Read whole from the record (the view cuts messages shorter than the API's limit).
    whole = [
        e["message"] for e in reads.events_about("Pod", namespace, name) if e["type"] == "Warning"
    ]
    return found.plus(_events(pod, container, warnings, waiting, whole))


def _state(container: dict[str, Any]) -> str:
    """`waiting CrashLoopBackOff: back-off ...` from the recorded state."""
    text = " ".join(p for p in (container.get("state", ""), container.get("state_reason", "")) if p)
    message = container.get("state_message", "")
    return f"{text}: {message}" if message else text


def _oom(where: str, container: dict[str, Any], last: dict[str, Any]) -> Findings:
    limit = str(container.get("limits", {}).get("memory", ""))
    return Findings(
        evidence=(
            f"{where} lastState.terminated.reason=OOMKilled exitCode={last['exit_code']}"
            f" at {last.get('finished') or '?'}; resources.limits.memory={limit or 'none'};"
            f" restartCount={container.get('restarts', 0)}",
        )
    )


def _crash(
    reads: Reads,
    where: str,
    pod: dict[str, Any],
    container: dict[str, Any],
    last: dict[str, Any],
    log: dict[str, Any],
) -> Findings:
    """The crash and the previous container's last log lines (and any blaming the config)."""
    crash = (
        f"{where} state={_state(container)}; lastState.terminated.exitCode="
        f"{last.get('exit_code')} reason={last.get('reason')};"
        f" restartCount={container.get('restarts', 0)}"
    )
    lines = [str(line) for line in log.get("lines") or []][-_LOG_LINES:]
    ends = (f"{where} previous log ends: {' | '.join(lines)}",) if lines else ()
    blamed = [
        line
        for record in reads.observed.logs
        if (record["namespace"], record["pod"], record["container"], record["previous"])
        == (pod["namespace"], pod["name"], container.get("name"), True)
        for line in record["config_errors"]
    ]
    return Findings(
        evidence=(crash, *ends),
        config_error=f"{where} previous log: {blamed[0][:200]}" if blamed else "",
    )


def _events(
    pod: dict[str, Any],
    container: dict[str, Any],
    warnings: list[dict[str, Any]],
    waiting: bool,
    messages: list[str],
) -> Findings:
    """The Pod's warning events and what they say; without any, why it is Pending."""
    label = f"Pod {pod['namespace']}/{pod['name']}"
    if not warnings:
        # Events expire (an hour by default); a Pod Pending for longer keeps the
        # scheduler's verdict only in its PodScheduled condition.
        return Findings(evidence=_unscheduled(label, pod))
    cited = tuple(
        f"Event on {label}: {e.get('reason')} x{e.get('count')}"
        f" (last {e.get('last_seen')}): {e.get('message')}"
        for e in warnings[:_EVENTS_CITED]
    )
    kills = liveness_kills(warnings)
    probe = (
        f"Event on {label}: {kills[0].get('reason')} x{kills[0].get('count')}:"
        f" {str(kills[0].get('message'))[:200]}"
        if kills
        else ""
    )
    texts = [str(container.get("state_message", "")), *messages]
    reason = container.get("state_reason", "")
    found = Findings(evidence=cited, probe_failure=probe)
    if reason in IMAGE_PULL_REASONS:
        found = found.plus(Findings(pull=pull_failure(texts)))
    elif waiting:
        found = found.plus(Findings(start=start_failure(texts), missing=missing_object(texts)))
    return found


def _unscheduled(label: str, pod: dict[str, Any]) -> tuple[str, ...]:
    """A Pending Pod's PodScheduled=False condition (reason and the scheduler's message)."""
    if pod.get("phase") != "Pending":
        return ()
    return tuple(
        f"{label} status.conditions {condition_text(c)}"
        for c in pod.get("conditions", [])
        if (c["type"], c["status"]) == ("PodScheduled", "False")
    )
