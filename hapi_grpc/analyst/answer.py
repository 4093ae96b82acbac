"""The analyst's final answer: the ADR-038 JSON contract, honest about how it was reached.

It says no language model was used; its confidence is the catalog's match score; the
root cause assessment cites what was read (`object field=value` lines), what was tried
before (a recovery) and why candidates were passed over.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.analyst.findings import Findings
from hapi_grpc.analyst.recovery import RecoveryView
from hapi_grpc.analyst.subject import Subject
from hapi_grpc.domain.levels import RiskLevel, Severity

__all__ = ["Answer", "confidence"]

_RISKS = frozenset(RiskLevel)
_MAX_ALTERNATIVES = 3
_APPS_KINDS = frozenset({"deployment", "statefulset", "daemonset", "replicaset"})


def confidence(hit: dict[str, Any]) -> float:
    value = hit.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, min(1.0, float(value)))
    return 0.0


@dataclass
class Answer:
    """Everything the answer is written from."""

    subject: Subject
    findings: Findings | None
    recovery: RecoveryView | None
    objections: list[str] = field(default_factory=list)

    def text(
        self,
        hit: dict[str, Any] | None,
        others: list[dict[str, Any]],
        why_none: str,
        parameters: dict[str, Any] | None = None,
    ) -> str:
        s = self.subject
        where = s.label()
        signal = s.signal_type or "unknown"
        severity = s.severity if s.known_severity else Severity.MEDIUM.value
        found = self.findings
        warnings = [
            "No language model was used: rule-based reading of evidence from the cluster"
            " (read-only Kubernetes tools) and rule-based workflow match."
            if found
            else "No language model was used: rule-based workflow match without root cause"
            " analysis. The reported signal may be a symptom of another cause."
        ]
        if not s.known_severity:
            warnings.append("The signal reported no severity; medium was assumed.")
        selected = None
        if hit is not None:
            score = confidence(hit)
            summary = (
                f"Rule-based match (no language model was used): the {signal} signal on"
                f" {where} matches catalog workflow {hit.get('workflow_id')!s} with match"
                f" confidence {score:.2f}."
            )
            selected = {
                "workflow_id": hit.get("workflow_id"),
                "version": hit.get("version", ""),
                "confidence": score,
                "rationale": (
                    f"Catalog workflow for the {found.cause(signal) if found else signal}"
                    f" failure (match confidence {score:.2f}); every parameter value comes"
                    " from what was read in the cluster."
                ),
                "estimated_risk": hit.get("estimated_risk")
                if hit.get("estimated_risk") in _RISKS
                else RiskLevel.MEDIUM,
                "parameters": parameters or {},
            }
        else:
            summary = (
                f"Rule-based match (no language model was used): no workflow selected for the"
                f" {signal} signal on {where}: {why_none}."
            )
        assessment = self._assessment(hit is None)
        if hit is None and self.objections:
            warnings.append(
                "The evidence does not support the premise of any candidate workflow;"
                " the candidates are listed as alternatives for review."
            )
        answer: dict[str, Any] = {
            "analysis_summary": summary,
            "root_cause_assessment": assessment,
            "rca_severity": severity,
            "selected_workflow": selected,
            "alternative_workflows": [
                {
                    "workflow_id": other.get("workflow_id"),
                    "confidence": confidence(other),
                    "rationale": "catalog match",
                }
                for other in others[:_MAX_ALTERNATIVES]
            ],
            "warnings": warnings,
            "context_used": {
                "cluster_state": found.evidence[0][:500]
                if found and found.evidence
                else "not assessed",
                "resource_availability": "not assessed",
                "blast_radius": where if s.name else "not assessed",
            },
        }
        target = self._target()
        if target is not None:
            answer["target_resource"] = target
        return json.dumps(answer, ensure_ascii=False)

    def _assessment(self, none_selected: bool) -> str:
        found = self.findings
        if found and found.evidence:
            support = [x for x in (found.config_error, found.probe_failure) if x]
            cited = [*found.evidence, *(x for x in support if x not in found.evidence)]
            text = (
                "Evidence read from the cluster (rule-based, no language model was used): "
                + "; ".join(cited)
                + "."
            )
        else:
            text = (
                "Not independently assessed (no language model was used); the reported"
                f" {self.subject.signal_type or 'unknown'} signal is taken at face value."
            )
        text += self.recovery.history() if self.recovery else ""
        if self.objections:
            lead = " Not remediated automatically: " if none_selected else " Passed over: "
            text += lead + "; ".join(dict.fromkeys(self.objections))
        return text

    def _target(self) -> dict[str, str] | None:
        target = self.findings.target_resource() if self.findings else None
        if target is not None:
            return target
        s = self.subject
        if not s.name:
            return None
        return {
            "namespace": s.namespace,
            "kind": s.kind,
            "name": s.name,
            "api_group": "apps" if s.kind.lower() in _APPS_KINDS else "",
        }
