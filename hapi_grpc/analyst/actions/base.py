"""What every action type's evidence module shares: the situation it reads and what it gives.

Design notes: docs/internals.md (`analyst/actions/base.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.analyst.conversation import Reads, Step
from hapi_grpc.analyst.findings import Findings
from hapi_grpc.analyst.subject import Subject

__all__ = ["Evidence", "Objection", "Situation", "Values", "target_values"]


@dataclass(frozen=True)
class Situation:
    """What one candidate's module reads from: the incident, the general findings,
    the reads so far, and the candidate as the search returned it."""

    subject: Subject
    findings: Findings
    reads: Reads
    hit: dict[str, Any] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        target = self.findings.target_resource()
        return target["namespace"] if target and target["namespace"] else self.subject.namespace

    def offered(self, tool: str) -> bool:
        return tool in self.reads.offered

    def reported(self, kind: str) -> dict[str, Any]:
        """The record of the reported object when it is a `kind` ({} if not, or not read)."""
        s = self.subject
        return self.reads.object(kind, s.namespace, s.name) if s.kind == kind else {}


@dataclass(frozen=True)
class Objection:
    """Why the evidence gives no value for a candidate (shown in the answer)."""

    reason: str


# role -> value
Values = dict[str, Any]


class Evidence:
    """One action type's reads and parameter values (docs/internals.md); by default
    its premises need no read beyond the general ones."""

    def reads(self, situation: Situation) -> list[Step]:
        return []

    def values(self, situation: Situation) -> Values | Objection:
        raise NotImplementedError


def target_values(kind: str, namespace: str) -> Values:
    """The roles every workflow of a type shares: the kind and namespace of the object
    the action changes (its name is the type's own role: `workload`)."""
    values: Values = {"kind": kind}
    if namespace:
        values["namespace"] = namespace
    return values
