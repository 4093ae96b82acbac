"""Where a captured case comes from: the `captured:` block of its `case.yaml`.

    captured:
      at: 2025-06-01T12:00:00Z          when the investigation finished
      remediation_id: rr-7f3a
      service_version: 0.1.0
      provider: openai                  "builtin" for the built-in analyst
      model: gpt-4o-mini
      prompt_hash: sha256:...           hapi_grpc.toolsets.registry
      catalog_hash: sha256:...          optional: the catalog it searched, when known
      decision: {...}                   the AnalysisResult (proto JSON mapping; at
                                        least selectedWorkflow, needsHumanReview,
                                        humanReviewReason)
      outcome: {...}                    optional: the ReportRemediationOutcomeRequest
                                        reported for it (proto JSON mapping)

`decision_of` and `outcome_of` read the two messages into what labelling needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from hapi_grpc.cases.expected import Strict

REASON_PREFIX = "HUMAN_REVIEW_REASON_"


class Provenance(Strict):
    at: datetime
    remediation_id: str = Field("", max_length=253)
    service_version: str = Field("", max_length=64)
    provider: str = Field("", max_length=64)
    model: str = Field("", max_length=253)
    prompt_hash: str = Field("", max_length=80)
    catalog_hash: str = Field("", max_length=80)
    decision: dict[str, Any]
    outcome: dict[str, Any] | None = None

    @field_validator("decision")
    @classmethod
    def _result(cls, value: dict[str, Any]) -> dict[str, Any]:
        from hapi.v1 import analysis_pb2

        _parse(value, analysis_pb2.AnalysisResult(), "an AnalysisResult")
        return value

    @field_validator("outcome")
    @classmethod
    def _report(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        from hapi.v1 import outcome_pb2

        if value is not None:
            _parse(value, outcome_pb2.ReportRemediationOutcomeRequest(), "an outcome report")
        return value


def _parse(value: dict[str, Any], message: Any, what: str) -> Any:
    from google.protobuf import json_format

    try:
        return json_format.ParseDict(value, message)
    except json_format.ParseError as exc:
        raise ValueError(f"not {what}: {exc}") from None


def plain(value: Any) -> Any:
    """Struct numbers are doubles on the wire: whole ones shown as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Decision:
    """What the service decided: a workflow it automated, or review and why."""

    workflow_id: str | None  # None: human review (nothing automated)
    parameters: dict[str, Any] = field(default_factory=dict)
    review_reason: str = ""  # lower case, without the enum prefix; "" = none given

    def text(self) -> str:
        if self.workflow_id is None:
            return f"review ({self.review_reason or 'no reason'})"
        shown = " ".join(f"{k}={v}" for k, v in sorted(self.parameters.items()))
        return f"{self.workflow_id} {shown}".rstrip()


@dataclass(frozen=True)
class Outcome:
    """How the remediation ended, as the controller reported it."""

    result: Literal["succeeded", "failed", "declined"]
    workflow_id: str  # what was executed; "" when a human declined before anything ran
    parameters: dict[str, Any]
    target: dict[str, str]
    signal_cleared: bool | None
    detail: str  # the failure's reason or the reviewer's words

    def text(self) -> str:
        detail = f" {self.detail}" if self.detail else ""
        cleared = {True: ", signal cleared", False: ", signal not cleared", None: ""}
        return f"{self.result}{detail}{cleared[self.signal_cleared]}"


def decision_of(provenance: Provenance) -> Decision:
    """The captured decision: a result needing review automates nothing."""
    from google.protobuf import json_format

    from hapi.v1 import analysis_pb2

    result = _parse(provenance.decision, analysis_pb2.AnalysisResult(), "an AnalysisResult")
    reason = analysis_pb2.HumanReviewReason.Name(result.human_review_reason)
    reason = reason.removeprefix(REASON_PREFIX).lower()
    reason = "" if reason == "unspecified" else reason
    selected = result.selected_workflow
    if result.needs_human_review or not selected.workflow_id:
        return Decision(None, review_reason=reason)
    return Decision(selected.workflow_id, plain(json_format.MessageToDict(selected.parameters)))


def outcome_of(provenance: Provenance) -> Outcome | None:
    """The reported outcome, when one arrived."""
    from google.protobuf import json_format

    from hapi.v1 import outcome_pb2

    if provenance.outcome is None:
        return None
    report = _parse(provenance.outcome, outcome_pb2.ReportRemediationOutcomeRequest(), "a report")
    ended = report.WhichOneof("result")
    detail = {
        "failed": report.failed.reason,
        "declined": report.declined.reason,
    }.get(ended, "")
    target = {
        "kind": report.target.kind,
        "name": report.target.name,
        "namespace": report.target.namespace,
        "api_group": report.target.api_group,
    }
    return Outcome(
        result=ended,
        workflow_id=report.executed.workflow_id,
        parameters=plain(json_format.MessageToDict(report.executed.parameters)),
        target=target,
        signal_cleared=report.signal_cleared if report.HasField("signal_cleared") else None,
        detail=detail,
    )
