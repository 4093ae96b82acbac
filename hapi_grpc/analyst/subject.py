"""What the incident reports, as the analyst starts from it.

Read from the `Incident` itself: the signal, the resource it names, the labels the
signal carries (a `container` or `pod` label names the one affected) and the
resources an alert storm names. The
alert's prose (error message, description) is never read for a decision or a
parameter: it is the signal's claim, which the cluster confirms or not.
"""

from __future__ import annotations

from dataclasses import dataclass

from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.levels import Severity

__all__ = ["Subject"]

_SEVERITIES = frozenset(Severity)


@dataclass(frozen=True, slots=True)
class Subject:
    """The reported signal and resource; empty strings when not reported."""

    signal_type: str
    severity: str
    component: str
    namespace: str
    kind: str
    name: str
    container: str = ""  # the signal's `container` label
    pod: str = ""  # the signal's `pod` label
    # Namespaces of the resources an alert storm names ("payments/Pod/api-1").
    affected_namespaces: tuple[str, ...] = ()

    @classmethod
    def of(cls, incident: Incident) -> Subject:
        signal = incident.signal
        labels = incident.cluster.signal_labels
        severity = str(signal.severity or "").lower()
        return cls(
            signal_type=signal.signal_type,
            severity=severity,
            component=signal.component,
            namespace=signal.namespace or labels.get("namespace", ""),
            kind=signal.resource_kind,
            name=signal.resource_name,
            container=labels.get("container", ""),
            pod=labels.get("pod", ""),
            affected_namespaces=tuple(
                dict.fromkeys(
                    r.split("/")[0]
                    for r in incident.storm.affected_resources[:50]
                    if r.count("/") == 2 and r.split("/")[0]
                )
            ),
        )

    @property
    def known_severity(self) -> bool:
        return self.severity in _SEVERITIES

    def label(self) -> str:
        """`Deployment/payment-api in namespace payments`, for the answer's prose."""
        resource = "/".join(p for p in (self.kind, self.name) if p) or "the reported resource"
        return f"{resource} in namespace {self.namespace}" if self.namespace else resource
