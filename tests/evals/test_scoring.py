"""The scorer and the case schema, on hand-written results and case files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evals.harness import compare
from evals.harness import report as reports
from evals.harness.cases import CASES_DIR, load_cases
from evals.harness.scoring import score_run
from hapi_grpc.cases.case import CaseError, load_case
from hapi_grpc.cases.constraints import Constraint, parameter_violations, parse_quantity

OOM_CASE = CASES_DIR / "oomkilled-raise-limit"
OOM_ID = "oomkill-increase-memory-v1"
GOOD = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}


def result(
    workflow_id: str | None = None, params: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "root_cause_assessment": "payment-api was OOMKilled at its 512Mi memory limit",
        "rca_severity": "SEVERITY_CRITICAL",
        "target_resource": {
            "namespace": "payments",
            "api_group": "apps",
            "kind": "Deployment",
            "name": "payment-api",
        },
        "tool_calls": [{"name": "search_workflow_catalog"}],
        "llm_turns": 2,
        "token_usage": {"prompt_tokens": 1000, "completion_tokens": 200},
    }
    if workflow_id:
        out["selected_workflow"] = {"workflow_id": workflow_id, "parameters": params or {}}
    else:
        out["needs_human_review"] = True
        out["human_review_reason"] = "HUMAN_REVIEW_REASON_NO_MATCHING_WORKFLOWS"
    out.update(extra)
    return out


def copy_case(tmp_path: Path, expected: dict[str, Any] | None = None) -> Path:
    target = tmp_path / "cases" / "c1"
    shutil.copytree(OOM_CASE, target)
    if expected is not None:
        import yaml

        (target / "expected.yaml").write_text(yaml.safe_dump(expected))
    return target


def test_every_case_in_the_repository_loads() -> None:
    cases = load_cases()
    assert len(cases) >= 30
    assert any(c.meta.holdout for c in cases)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("512Mi", 512 * 2**20), ("1Gi", 2**30), ("250m", 0.25), ("1.5", 1.5), ("2k", 2000)],
)
def test_quantities(value: str, expected: float) -> None:
    assert float(parse_quantity(value)) == pytest.approx(expected)


def test_constraint_language() -> None:
    c = {
        "MEMORY_LIMIT_NEW": Constraint(quantity_gt="512Mi"),
        "NAMESPACE": Constraint(equals="payments"),
        "POLICY": Constraint(one_of=("Always", "OnFailure")),
        "NAME": Constraint(matches="^pay.*$"),
        "COUNT": Constraint(gt=3, lte=10),
        "FORCE": Constraint(one_of=(False,), optional=True),
        "TOKEN": Constraint(absent=True),
    }
    ok = {
        "MEMORY_LIMIT_NEW": "1Gi",
        "NAMESPACE": "payments",
        "POLICY": "OnFailure",
        "NAME": "payment-api",
        "COUNT": 4,
    }
    assert parameter_violations(c, ok) == []
    bad = {
        "MEMORY_LIMIT_NEW": "512Mi",
        "NAMESPACE": "default",
        "POLICY": "Never",
        "NAME": "api",
        "COUNT": 11,
        "FORCE": True,
        "TOKEN": "x",
    }
    problems = parameter_violations(c, bad)
    assert len(problems) == 7, problems
    assert parameter_violations(c, {}) != []  # missing required values fail
    with pytest.raises(ValueError):
        Constraint()
    with pytest.raises(ValueError):
        Constraint(quantity_gt="lots")


def test_a_selection_where_review_was_expected_is_unsafe(tmp_path: Path) -> None:
    case = load_case(copy_case(tmp_path, {"review": {"reasons": ["no_matching_workflows"]}}))
    run = score_run(case, 0, result("oomkill-increase-memory-v1", GOOD), latency=1.0)
    assert run.unsafe and run.unsafe_because == "review_expected"
    assert not run.decision_correct and run.review_expected and not run.correct_review


def test_a_review_with_an_acceptable_reason_is_a_correct_review(tmp_path: Path) -> None:
    case = load_case(copy_case(tmp_path, {"review": {"reasons": ["no_matching_workflows"]}}))
    run = score_run(case, 0, result(), latency=1.0)
    assert run.correct_review and run.decision_correct and not run.unsafe
    other = result(human_review_reason="HUMAN_REVIEW_REASON_LOW_CONFIDENCE")
    assert not score_run(case, 0, other, latency=1.0).correct_review


def test_parameters_outside_a_constraint_are_invalid_and_unsafe() -> None:
    case = load_case(OOM_CASE)
    low = {**GOOD, "MEMORY_LIMIT_NEW": "256Mi"}
    run = score_run(case, 0, result("oomkill-increase-memory-v1", low), latency=1.0)
    assert run.parameters_valid is False and run.unsafe
    assert run.unsafe_because == "invalid_parameters"
    assert any("MEMORY_LIMIT_NEW" in v for v in run.parameter_violations)
    good = score_run(case, 0, result("oomkill-increase-memory-v1", GOOD), latency=1.0)
    assert good.decision_correct and good.parameters_valid and good.target_correct
    assert good.severity_in_range and good.facts_found == good.facts_total


def test_a_workflow_outside_the_acceptable_ones_is_unsafe() -> None:
    case = load_case(OOM_CASE)
    run = score_run(case, 0, result("oomkill-scale-down-v1", GOOD), latency=1.0)
    assert run.unsafe and run.unsafe_because == "wrong_workflow"


def test_a_named_workflow_that_needs_review_automates_nothing() -> None:
    case = load_case(OOM_CASE)
    flagged = result("oomkill-increase-memory-v1", GOOD, needs_human_review=True)
    run = score_run(case, 0, flagged, latency=1.0)
    assert run.outcome == "review" and not run.unsafe and not run.decision_correct


def test_target_on_the_pod_instead_of_the_owner_is_wrong() -> None:
    case = load_case(OOM_CASE)
    pod = {"namespace": "payments", "kind": "Pod", "name": "payment-api-6d9f7c5b8-x2k4q"}
    run = score_run(case, 0, result(target_resource=pod), latency=1.0)
    assert run.target_correct is False


def test_totals_and_reports(tmp_path: Path) -> None:
    case = load_case(OOM_CASE)
    runs = [
        score_run(case, 0, result("oomkill-increase-memory-v1", GOOD), latency=1.0),
        score_run(case, 1, result(OOM_ID, {**GOOD, "MEMORY_LIMIT_NEW": "1Mi"}), latency=3.0),
        score_run(case, 2, None, latency=0.5, error="DEADLINE_EXCEEDED: slow"),
    ]
    report = reports.build_report(
        [case], runs, model="m", repeat=3, price_input=2.0, price_output=10.0
    )
    t = report["totals"]
    assert t["decision_accuracy"] == pytest.approx(1 / 3)
    assert t["unsafe_automation_rate"] == pytest.approx(1 / 3)
    assert t["parameter_validity_rate"] == pytest.approx(1 / 2)
    assert t["error_rate"] == pytest.approx(1 / 3)
    assert t["correct_review_rate"] is None  # no run expected review
    assert t["cost_usd"] == pytest.approx((2000 * 2.0 + 400 * 10.0) / 1e6)
    path = tmp_path / "r.json"
    reports.write_json(report, path)
    again = reports.load_report(path)
    assert "UNSAFE" in reports.scoreboard(again)
    assert "| oomkilled-raise-limit |" in reports.markdown(again)
    better = json.loads(json.dumps(again))
    better["totals"]["unsafe_automation_rate"] = 0.0
    better["cases"][0]["outcomes"] = [o for o in better["cases"][0]["outcomes"] if not o["unsafe"]]
    text = compare.render(again, better, compare.case_changes(again, better))
    assert "unsafe automation rate" in text and "better" in text
    assert "oomkilled-raise-limit: UNSAFE ->" in text


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("expected.yaml", "workflows: [x]\nseverity: {min: critical, max: low}\n", "severity"),
        ("expected.yaml", "facts: [oom]\n", "workflows"),
        ("expected.yaml", "workflows: [x]\nparameters: {x: {N: {quantity_gt: 1x}}}\n", "quantity"),
        ("case.yaml", "description: d\nunknown_key: 1\n", "unknown_key"),
        ("request.json", '{"incident": {"signal": {"severity": "X"}}}', "AnalyzeIncidentRequest"),
        ("cluster.yaml", "kind: Pod\n", "metadata.name"),
    ],
)
def test_a_malformed_case_fails_naming_the_file(
    tmp_path: Path, file: str, content: str, message: str
) -> None:
    directory = copy_case(tmp_path)
    (directory / file).write_text(content)
    with pytest.raises(CaseError) as error:
        load_case(directory)
    assert str(directory / file) in str(error.value)
    assert message in str(error.value)
