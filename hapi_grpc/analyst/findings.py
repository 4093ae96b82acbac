"""What the general reads found: the objects that matter, what they show, and the cause.

`Findings` holds the records (as `domain.observed` parsed them) of the workload,
its worst Pod and container and that Pod's Node, the resource to remediate, the
lines cited in the answer, and `cause`: the failure the cluster shows, in the
signal vocabulary the catalog is labelled with. A memory alert whose container is
OOMKilled is an OOMKilled incident; a Pod whose Node stopped posting status is a
NodeNotReady one. The reported signal stands when the reads show nothing else.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hapi_grpc.analyst.runtime_errors import PullFailure, StartFailure

__all__ = ["IMAGE_PULL_REASONS", "Findings", "last_termination"]

IMAGE_PULL_REASONS = frozenset({"ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull"})
_CONFIG_REASONS = frozenset({"CreateContainerConfigError"})
_START_REASONS = frozenset({"CreateContainerError", "RunContainerError", "StartError"})


def last_termination(container: dict[str, Any]) -> dict[str, Any]:
    """The container's last termination ({} when it never terminated)."""
    last = container.get("last_termination") or {}
    return last if last.get("reason") or last.get("exit_code", -1) >= 0 else {}


@dataclass(frozen=True)
class Findings:
    """Evidence as `object field=value` lines, the records that matter, and the cause."""

    evidence: tuple[str, ...] = ()
    target: str = ""  # namespace/group/Kind/name
    workload: dict[str, Any] | None = None
    pod: dict[str, Any] | None = None
    container: dict[str, Any] | None = None
    node: dict[str, Any] | None = None
    config_error: str = ""  # a previous-log line blaming the configuration
    probe_failure: str = ""  # the event saying a liveness probe killed the container
    pull: PullFailure | None = None
    start: StartFailure | None = None
    missing: tuple[str, str] | None = None  # (kind, name) a container waits on

    def plus(self, later: Findings) -> Findings:
        """Both parts: the evidence of each, and `later`'s values where it has one."""
        values = {
            f.name: getattr(later, f.name) or getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "evidence"
        }
        return Findings(evidence=self.evidence + later.evidence, **values)

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

    @property
    def target_kind(self) -> str:
        return (self.target_resource() or {}).get("kind", "")

    def cause(self, reported: str) -> str:
        """The failure the reads show, as a catalog signal type; `reported` otherwise."""
        if self.target_kind == "Node" and self.node is not None:
            if self.node.get("ready") != "True":
                return "NodeNotReady"
            for pressure in ("DiskPressure", "MemoryPressure", "PIDPressure"):
                if pressure in self.node.get("pressure", []):
                    return f"Node{pressure}"
        container = self.container or {}
        reason = str(container.get("state_reason", ""))
        if last_termination(container).get("reason") == "OOMKilled":
            return "OOMKilled"
        if reason in IMAGE_PULL_REASONS:
            return "ImagePullBackOff"
        if reason in _CONFIG_REASONS or reason in _START_REASONS:
            return reason
        if reason == "CrashLoopBackOff":
            return "CrashLoopBackOff"
        return reported
