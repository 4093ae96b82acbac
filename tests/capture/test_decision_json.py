"""A captured decision is what the service answered: `decision_json` against the
message's own JSON mapping (`MessageToDict(result_to_proto(...))`)."""

from __future__ import annotations

import pytest
from google.protobuf import json_format

from hapi.v1 import analysis_pb2
from hapi_grpc.capture.decision_json import NOT_KEPT, decision_json
from hapi_grpc.domain import result as r
from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.transport.converters import result_to_proto

CALL = r.ToolCallRecord(
    "search_workflow_catalog",
    '{"query":"oom"}',
    {"query": "oom"},
    "[]",
    r.ToolCallStatus.SUCCESS,
    0.2,
)
ATTEMPT = r.ValidationAttempt(1, "wf-1", {"A": "b"}, (), True, r.ValidationSource.TOOL)


def _full(severity: Severity, risk: RiskLevel, reason: r.HumanReviewReason) -> r.AnalysisResult:
    """Every field set, none at its default."""
    return r.AnalysisResult(
        remediation_id="rr-1",
        incident_id="inc-1",
        analysis_summary="summary ü",
        root_cause_assessment="cause",
        rca_severity=severity,
        target_resource=r.TargetResource("ns", "Deployment", "api", "apps"),
        selected_workflow=r.SelectedWorkflow(
            "wf-1",
            "1.2.0",
            0.85,
            "fits",
            risk,
            {
                "NAMESPACE": "ns",
                "REPLICAS": 3,
                "RATIO": 0.5,
                "DRY_RUN": False,
                "TAGS": ["a", 1, None],
                "NESTED": {"k": {"deep": True}},
                "NONE": None,
            },
            "ScaleReplicas",
        ),
        alternative_workflows=[
            r.AlternativeWorkflow("wf-2", 0.4, "maybe", "RestartPod"),
            r.AlternativeWorkflow("wf-3", 0.0),
        ],
        warnings=["one", "two"],
        context_used=r.ContextUsed("state", "room", "small"),
        needs_human_review=True,
        human_review_reason=reason,
        validation_attempts=[ATTEMPT],
        tool_calls=[CALL],
        model="gpt-x",
        language_model_used=True,
        prompt_tokens=10,
        completion_tokens=5,
        llm_turns=3,
        duration_seconds=1.5,
    )


CASES = [
    r.AnalysisResult(remediation_id="rr-bare"),
    r.AnalysisResult(
        remediation_id="rr-empty-parts",
        target_resource=r.TargetResource(),
        context_used=r.ContextUsed(),
        selected_workflow=r.SelectedWorkflow("wf-1", "", 0.0, "", None, {}),  # type: ignore[arg-type]
        alternative_workflows=[r.AlternativeWorkflow("wf-2", 1.0)],
    ),
    *(_full(Severity.LOW, RiskLevel.LOW, reason) for reason in r.HumanReviewReason),
    *(_full(severity, RiskLevel.HIGH, r.HumanReviewReason.LOW_CONFIDENCE) for severity in Severity),
    *(_full(Severity.HIGH, risk, r.HumanReviewReason.LOW_CONFIDENCE) for risk in RiskLevel),
]


def _answered(result: r.AnalysisResult) -> dict:
    as_json = json_format.MessageToDict(result_to_proto(result))
    return {k: v for k, v in as_json.items() if k not in NOT_KEPT}


@pytest.mark.parametrize("result", CASES, ids=lambda c: c.remediation_id)
def test_the_decision_is_the_answer_without_what_the_case_replays(result: r.AnalysisResult) -> None:
    assert decision_json(result) == _answered(result)


def test_every_field_of_the_message_is_kept_or_named_as_left_out() -> None:
    """A field added to AnalysisResult fails here until the case keeps it or says why not."""
    full = decision_json(_full(Severity.HIGH, RiskLevel.HIGH, r.HumanReviewReason.LOW_CONFIDENCE))
    names = {f.json_name for f in analysis_pb2.AnalysisResult.DESCRIPTOR.fields}
    assert set(NOT_KEPT) <= names
    assert names - set(NOT_KEPT) == set(full)
    selected = {f.json_name for f in analysis_pb2.SelectedWorkflow.DESCRIPTOR.fields}
    assert selected == set(full["selectedWorkflow"])
