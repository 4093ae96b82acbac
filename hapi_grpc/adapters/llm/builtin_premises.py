"""Whether the evidence read supports a catalog workflow's premise.

The built-in analyst selects a workflow that changes something only when the
evidence positively supports what the workflow assumes; otherwise it flags
the incident for review and lists the workflow as an alternative. A wrong
automated remediation is far worse than a review. The rules are general:

- a GitOps-managed resource (an Argo CD or Flux label or annotation on it) is
  changed only through a GitOps-aware workflow: a direct patch is reverted at
  the next sync;
- cleaning up after a symptom (deleting evicted pods) is no remediation while
  the cause (a node pressure condition) is still True;
- a Pod the scheduler cannot place is not fixed by restarting or recreating
  it: no node fits it before or after;
- a crash loop is remediated only by the workflow whose premise the evidence
  shows: a configuration error in the previous log for a configuration fix, a
  liveness probe failure event for a probe change. A crash without such
  evidence (a panic, a missing file, an exit code alone) is for review.

Read-only workflows (they change nothing) are always acceptable.
"""

from __future__ import annotations

import re
from typing import Any

from hapi_grpc.adapters.llm.builtin_evidence import Findings

__all__ = ["objection"]

_READ_ONLY_RE = re.compile(r"changes nothing|read-only|read only", re.IGNORECASE)
_GITOPS_RE = re.compile(r"\bgitops\b|\bargo ?cd\b|\bflux\b", re.IGNORECASE)
_EVICTED_RE = re.compile(r"\bevicted\b", re.IGNORECASE)
_PROBE_RE = re.compile(r"\bprobe\b", re.IGNORECASE)
_CONFIG_RE = re.compile(r"\bconfig(uration|maps?)?\b", re.IGNORECASE)
_RESTART_RE = re.compile(r"\b(restart|recreat|reschedul|delet\w* (a |the )?pods?)", re.IGNORECASE)


def _text(hit: dict[str, Any]) -> str:
    return f"{hit.get('title', '')} {hit.get('description', '')}"


def objection(hit: dict[str, Any], findings: Findings | None) -> str | None:
    """Why the evidence does not support selecting `hit`; None when it does."""
    if findings is None:
        return None  # nothing was read: the catalog match is all there is
    text = _text(hit)
    if _READ_ONLY_RE.search(text):
        return None
    workflow = str(hit.get("workflow_id", ""))
    if findings.gitops and not _GITOPS_RE.search(text):
        return (
            f"{findings.gitops}: the resource is managed by GitOps and {workflow} changes it"
            " directly, which the next sync would revert"
        )
    if findings.node_pressure and _EVICTED_RE.search(text):
        conditions = ", ".join(f"{c}=True" for c in findings.node_pressure)
        return (
            f"Node {findings.node} still reports {conditions}: {workflow} deletes the evicted"
            " pods (the symptom) while the cause persists"
        )
    if findings.unschedulable and _RESTART_RE.search(text):
        return (
            f"{findings.unschedulable}: no node fits the Pod, and {workflow} only restarts or"
            " recreates it"
        )
    if findings.crash_loop:
        return _crash_objection(workflow, text, findings)
    return None


def _crash_objection(workflow: str, text: str, findings: Findings) -> str | None:
    if _PROBE_RE.search(text):
        if findings.probe_failure:
            return None
        return f"no liveness probe failure was found in the events, the premise of {workflow}"
    if _CONFIG_RE.search(text):
        if findings.config_error:
            return None
        return f"the previous container log shows no configuration error, the premise of {workflow}"
    return (
        f"the evidence read (exit code, previous log, events) does not show the premise of"
        f" {workflow}"
    )


def supporting(findings: Findings | None) -> list[str]:
    """The evidence lines a selection rests on, for the root cause assessment."""
    if findings is None:
        return []
    return [line for line in (findings.config_error, findings.probe_failure) if line]
