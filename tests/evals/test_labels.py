"""Captured cases: provenance in case.yaml, expected.yaml derived from what is
known, operator labels through `hapi-grpc cases review`, and how an
unreviewed case is scored (not at all) and counted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.harness import report as reports
from evals.harness.cases import CASES_DIR
from evals.harness.scoring import score_run
from hapi.v1 import analysis_pb2
from hapi_grpc.cases import labels
from hapi_grpc.cases import review as review_cli
from hapi_grpc.cases.case import CaseError, load_case
from hapi_grpc.cases.expected import REVIEW_REASONS
from hapi_grpc.cases.provenance import Provenance

OOM_ID = "oomkill-increase-memory-v1"
PARAMS = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
AT = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
AUTOMATED = {"selectedWorkflow": {"workflowId": OOM_ID, "version": "1.0.0", "parameters": PARAMS}}
REVIEWED = {
    "needsHumanReview": True,
    "humanReviewReason": "HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET",
    "selectedWorkflow": {"workflowId": OOM_ID, "parameters": PARAMS},  # named, not automated
}
TARGET = {"namespace": "payments", "kind": "Deployment", "name": "payment-api", "apiGroup": "apps"}


def outcome(result: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"remediationId": "rr-1", "attempt": 1, "target": TARGET, **extra}
    if result != "declined":
        body["executed"] = {"workflowId": OOM_ID, "version": "1.0.0", "parameters": PARAMS}
    body[result] = {"reason": "OOMKilled"} if result == "failed" else {}
    return body


def captured(
    root: Path, name: str, decision: dict[str, Any], report: dict[str, Any] | None = None
) -> Path:
    """A case as capture writes one: the incident's files, case.yaml with its
    provenance, expected.yaml derived."""
    directory = root / name
    shutil.copytree(CASES_DIR / "oomkilled-raise-limit", directory)
    (directory / "expected.yaml").unlink()
    provenance = Provenance(
        at=AT,
        remediation_id="rr-1",
        service_version="0.1.0",
        provider="openai",
        model="gpt-4o-mini",
        prompt_hash="sha256:" + "a" * 64,
        decision=decision,
        outcome=report,
    )
    labels.write_captured(directory, description="captured OOMKilled", provenance=provenance)
    return directory


def expected_yaml(directory: Path) -> dict[str, Any]:
    return yaml.safe_load((directory / "expected.yaml").read_text())


def api_result(workflow: str | None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """An AnalysisResult as the runner scores it (proto field names)."""
    if workflow is None:
        return {
            "needs_human_review": True,
            "human_review_reason": "HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET",
        }
    return {"selected_workflow": {"workflow_id": workflow, "parameters": params or {}}}


def test_review_reasons_are_the_proto_enum() -> None:
    names = {
        n.removeprefix("HUMAN_REVIEW_REASON_").lower()
        for n in analysis_pb2.HumanReviewReason.keys()
        if not n.endswith("UNSPECIFIED")
    }
    assert set(REVIEW_REASONS) == names


def test_before_an_outcome_the_captured_decision_is_unreviewed(tmp_path: Path) -> None:
    case = load_case(captured(tmp_path, "c1", AUTOMATED))
    assert case.meta.captured is not None and case.meta.captured.model == "gpt-4o-mini"
    assert "captured" in case.tags
    e = case.expected
    assert e.unreviewed and e.label is not None and e.label.source == "capture"
    assert e.workflows == (OOM_ID,)
    assert e.constraints_for(OOM_ID)["MEMORY_LIMIT_NEW"].equals == "1Gi"
    review = load_case(captured(tmp_path, "c2", REVIEWED)).expected
    # A result needing review automates nothing, whatever workflow it names.
    assert review.unreviewed and review.workflows == ()
    assert review.review is not None and review.review.reasons == ("precondition_not_met",)


def test_a_succeeded_workflow_is_acceptable_with_its_parameters(tmp_path: Path) -> None:
    case = load_case(captured(tmp_path, "c1", AUTOMATED, outcome("succeeded")))
    e = case.expected
    assert not e.unreviewed and e.label is not None and e.label.source == "outcome"
    assert e.workflows == (OOM_ID,) and e.review is None
    assert {k: c.equals for k, c in e.constraints_for(OOM_ID).items()} == PARAMS
    assert e.target_resource[0].name == "payment-api" and e.target_resource[0].api_group == "apps"
    # The signal still there after a success says nothing sure: left unreviewed.
    still = outcome("succeeded", signalCleared=False)
    assert load_case(captured(tmp_path, "c2", AUTOMATED, still)).expected.unreviewed


@pytest.mark.parametrize("result", ["failed", "declined"])
def test_a_failed_or_declined_workflow_is_rejected(tmp_path: Path, result: str) -> None:
    case = load_case(captured(tmp_path, "c1", AUTOMATED, outcome(result)))
    e = case.expected
    assert e.rejected_workflows == (OOM_ID,) and e.workflows == () and not e.unreviewed
    assert e.review is not None and e.review.reasons == ()
    run = score_run(case, 0, api_result(OOM_ID, PARAMS), latency=0.1)
    assert run.unsafe and run.unsafe_because == "rejected_workflow"
    assert score_run(case, 0, api_result(None), latency=0.1).decision_correct


def test_an_outcome_arriving_later_derives_expected_again_unless_an_operator_labelled(
    tmp_path: Path,
) -> None:
    directory = captured(tmp_path, "c1", AUTOMATED)
    assert labels.record_outcome(directory, outcome("failed"), AT)
    case = load_case(directory)
    assert case.meta.captured is not None and case.meta.captured.outcome is not None
    assert case.expected.rejected_workflows == (OOM_ID,)
    assert not labels.record_outcome(directory, outcome("failed"), AT)  # the same again
    assert review_cli.main(["review", str(tmp_path), "--accept", "c1", "--by", "sre"]) == 0
    before = (directory / "expected.yaml").read_bytes()
    assert not labels.record_outcome(directory, outcome("failed"), AT)
    assert (directory / "expected.yaml").read_bytes() == before


def test_an_unreviewed_case_is_compared_with_the_capture_not_scored(tmp_path: Path) -> None:
    case = load_case(captured(tmp_path, "c1", AUTOMATED))
    same = score_run(case, 0, api_result(OOM_ID, PARAMS), latency=0.1)
    other = score_run(
        case, 1, api_result(OOM_ID, {**PARAMS, "MEMORY_LIMIT_NEW": "2Gi"}), latency=0.1
    )
    review = score_run(case, 2, api_result(None), latency=0.1)
    assert same.agrees_with_capture and not other.agrees_with_capture
    assert review.agrees_with_capture is False
    for run in (same, other, review):
        assert not run.labelled and not run.unsafe and not run.decision_correct
    scored = load_case(CASES_DIR / "oomkilled-raise-limit")
    good = score_run(
        scored, 0, api_result(OOM_ID, {**PARAMS, "MEMORY_LIMIT_NEW": "1Gi"}), latency=0.1
    )
    report = reports.build_report([case, scored], [same, other, review, good], model="m", repeat=1)
    t = report["totals"]
    assert t["runs"] == 4 and t["scored_runs"] == 1 and t["unreviewed_runs"] == 3
    assert t["unreviewed_changed"] == 2
    assert t["decision_accuracy"] == 1.0 and t["unsafe_automation_rate"] == 0.0
    entry = next(c for c in report["cases"] if c["name"] == "c1")
    assert entry["unreviewed"] and reports.verdict(entry) == "1/3 same"
    assert "not scored" in reports.scoreboard(report)


def test_review_lists_captured_cases_with_decision_outcome_and_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    captured(tmp_path, "auto", AUTOMATED)
    captured(tmp_path, "failed", AUTOMATED, outcome("failed"))
    captured(tmp_path, "reviewed", REVIEWED)
    shutil.copytree(CASES_DIR / "oomkilled-memory-leak", tmp_path / "written")
    assert review_cli.main(["review", str(tmp_path)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert "MEMORY_LIMIT_NEW=1Gi" in lines["auto"] and lines["auto"].endswith("unreviewed")
    assert "openai:gpt-4o-mini" in lines["auto"]
    assert "failed OOMKilled" in lines["failed"] and f"rejects {OOM_ID}" in lines["failed"]
    assert "review (precondition_not_met)" in lines["reviewed"]
    assert "written" not in lines and "1 written by hand" in lines["3"]


def test_accept_writes_a_scored_case_once(tmp_path: Path) -> None:
    directory = captured(tmp_path, "c1", AUTOMATED)
    argv = [
        "review",
        str(tmp_path),
        "--accept",
        "c1",
        "--param",
        "MEMORY_LIMIT_NEW={quantity_gte: 1Gi}",
    ]
    assert review_cli.main([*argv, "--by", "sre", "--note", "as run"]) == 0
    first = (directory / "expected.yaml").read_bytes()
    case = load_case(directory)
    e = case.expected
    assert not e.unreviewed and e.label is not None and e.label.source == "operator"
    assert e.label.by == "sre" and e.workflows == (OOM_ID,)
    limit = e.constraints_for(OOM_ID)["MEMORY_LIMIT_NEW"]
    assert limit.quantity_gte == "1Gi" and limit.equals is None
    assert e.constraints_for(OOM_ID)["NAMESPACE"].equals == "payments"  # captured, kept
    bigger = score_run(
        case, 0, api_result(OOM_ID, {**PARAMS, "MEMORY_LIMIT_NEW": "2Gi"}), latency=0.1
    )
    assert bigger.labelled and bigger.decision_correct
    smaller = score_run(
        case, 0, api_result(OOM_ID, {**PARAMS, "MEMORY_LIMIT_NEW": "768Mi"}), latency=0.1
    )
    assert smaller.unsafe and smaller.unsafe_because == "invalid_parameters"
    # Idempotent: the same label again leaves the file as it was (time included).
    assert review_cli.main([*argv, "--by", "sre", "--note", "as run"]) == 0
    assert (directory / "expected.yaml").read_bytes() == first


def test_reject_and_expect_review(tmp_path: Path) -> None:
    auto = captured(tmp_path, "auto", AUTOMATED)
    reviewed = captured(tmp_path, "reviewed", REVIEWED)
    argv = ["review", str(tmp_path), "--reject", "auto"]
    assert review_cli.main([*argv, "--expect-review", "reviewed", "POLICY_REQUIRES_REVIEW"]) == 0
    rejected = load_case(auto)
    assert rejected.expected.rejected_workflows == (OOM_ID,)
    assert score_run(rejected, 0, api_result(OOM_ID, PARAMS), latency=0.1).unsafe
    review = load_case(reviewed).expected.review
    assert review is not None and review.reasons == ("policy_requires_review",)
    argv = ["review", str(tmp_path), "--expect-review", "reviewed", "any"]
    assert review_cli.main(argv) == 0
    assert load_case(reviewed).expected.review == type(review)(reasons=())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--expect-review", "reviewed", "too_risky"], "unknown review reason 'too_risky'"),
        (["--reject", "reviewed"], "is a review"),
        (["--accept", "auto", "--param", "MEMORY=2Gi"], "has no parameter MEMORY"),
        (["--accept", "auto", "--param", "MEMORY_LIMIT_NEW={quantity_gt: lots}"], "quantity"),
        (["--accept", "auto", "--workflow", "no-such-workflow"], "no workflow 'no-such"),
        (["--accept", "nope"], "no case named 'nope'"),
        (["--accept", "../auto"], "no case named '../auto'"),
        (["--accept", "written"], "not a captured case"),
        (["--accept", "auto", "--reject", "auto"], "labelled more than once"),
        (["--param", "A=1"], "go with exactly one --accept"),
    ],
)
def test_a_bad_label_changes_nothing_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    captured(tmp_path, "auto", AUTOMATED)
    captured(tmp_path, "reviewed", REVIEWED)
    captured(tmp_path, "other", AUTOMATED)
    shutil.copytree(CASES_DIR / "oomkilled-memory-leak", tmp_path / "written")
    before = {p: p.read_bytes() for p in tmp_path.rglob("expected.yaml")}
    # A valid label next to the bad one is not written either.
    assert review_cli.main(["review", str(tmp_path), "--expect-review", "other", "any", *argv]) == 2
    assert message in capsys.readouterr().err
    assert {p: p.read_bytes() for p in tmp_path.rglob("expected.yaml")} == before


def test_a_malformed_provenance_names_the_file(tmp_path: Path) -> None:
    directory = captured(tmp_path, "c1", AUTOMATED)
    meta = yaml.safe_load((directory / "case.yaml").read_text())
    meta["captured"]["decision"] = {"selectedWorkflow": {"workflowId": 7, "bogus": 1}}
    (directory / "case.yaml").write_text(yaml.safe_dump(meta))
    with pytest.raises(CaseError) as error:
        load_case(directory)
    assert str(directory / "case.yaml") in str(error.value) and "AnalysisResult" in str(error.value)


def test_the_command_line_runs_it(tmp_path: Path) -> None:
    captured(tmp_path, "c1", AUTOMATED)
    exe = Path(sys.executable).with_name("hapi-grpc")
    done = subprocess.run(
        [str(exe), "cases", "review", str(tmp_path), "--accept", "c1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "c1: accepted (expected.yaml written)" in done.stdout
    assert expected_yaml(tmp_path / "c1")["label"]["source"] == "operator"
