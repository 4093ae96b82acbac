"""The answer to a recovery request whose attempts are spent."""

from __future__ import annotations

from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.recovery.failures import classify
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason

__all__ = ["exhausted_result"]

_SHOWN = 3


def exhausted_result(incident: Incident, model: str, language_model_used: bool) -> AnalysisResult:
    """Review, nothing selected, no investigation run: the controller's attempts are
    spent, and what failed is listed for the human who decides next."""
    recovery = incident.recovery
    assert recovery is not None and recovery.exhausted
    tried = [
        f"execution {position}: {p.workflow.workflow_id} failed with {p.failure.reason}"
        f" ({classify(p.failure.reason).label})"
        for position, p in enumerate(recovery.previous_executions, 1)
    ]
    summary = (
        f"Recovery attempt {recovery.attempt_number} exceeds the maximum of"
        f" {recovery.max_attempts}: no further remediation is automated."
    )
    return AnalysisResult(
        remediation_id=incident.remediation_id,
        incident_id=incident.incident_id,
        analysis_summary=summary,
        root_cause_assessment="Not investigated: the recovery attempts are spent. Tried before: "
        + "; ".join(tried[-_SHOWN:])
        + ".",
        warnings=[summary, *(f"Failed before: {t}." for t in tried[-_SHOWN:])],
        needs_human_review=True,
        human_review_reason=HumanReviewReason.RECOVERY_ATTEMPTS_EXHAUSTED,
        model=model,
        language_model_used=language_model_used,
    )
