"""`hapi-grpc eval compare` on reports made from scored results: which
decisions changed, which way they moved, what is a regression, and what the
two runs were made with. Two real runs are compared in test_rollout_gate.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.harness import cli, compare, identity
from evals.harness import report as reports
from evals.harness.cases import CASES_DIR
from evals.harness.scoring import RunScore, score_run
from hapi_grpc.cases.case import Case, load_case

OOM_ID = "oomkill-increase-memory-v1"
GOOD = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
CONF = {
    "provider": "builtin",
    "model": "builtin",
    "prompt_hash": "sha256:" + "1" * 64,
    "catalog_hash": "sha256:" + "2" * 64,
    "catalogs": 1,
}


def result(workflow: str | None, params: dict[str, Any] | None = None, reason: str = "") -> Any:
    if workflow is None:
        return {
            "needs_human_review": True,
            "human_review_reason": f"HUMAN_REVIEW_REASON_{reason or 'NO_MATCHING_WORKFLOWS'}",
        }
    return {"selected_workflow": {"workflow_id": workflow, "parameters": params or {}}}


def case(tmp_path: Path, name: str, expected: dict[str, Any]) -> Case:
    directory = tmp_path / name
    shutil.copytree(CASES_DIR / "oomkilled-raise-limit", directory)
    (directory / "expected.yaml").write_text(yaml.safe_dump(expected))
    return load_case(directory)


@pytest.fixture
def cases(tmp_path: Path) -> dict[str, Case]:
    review_only = {"review": {"reasons": []}}
    oom = {
        "workflows": [OOM_ID],
        "parameters": {OOM_ID: {"MEMORY_LIMIT_NEW": {"quantity_gt": "512Mi"}}},
    }
    return {
        "steady": case(tmp_path, "steady", review_only),
        "now-unsafe": case(tmp_path, "now-unsafe", review_only),
        "other-params": case(tmp_path, "other-params", review_only),
        "now-right": case(tmp_path, "now-right", oom),
        "reason": case(tmp_path, "reason", review_only),
        "unreviewed": case(tmp_path, "unreviewed", {**oom, "unreviewed": True}),
        "added": case(tmp_path, "added", review_only),
    }


def report(cases: dict[str, Case], decisions: dict[str, Any], **conf: Any) -> dict[str, Any]:
    runs: list[RunScore] = []
    for name, answer in decisions.items():
        runs.append(score_run(cases[name], 0, answer, latency=0.1))
    chosen = [cases[name] for name in decisions]
    return reports.build_report(chosen, runs, model="m", repeat=1, configuration={**CONF, **conf})


def test_each_changed_decision_is_named_with_its_direction(cases: dict[str, Case]) -> None:
    a = report(
        cases,
        {
            "steady": result(None),
            "now-unsafe": result(None),
            "other-params": result(OOM_ID, GOOD),
            "now-right": result(None),
            "reason": result(None),
            "unreviewed": result(OOM_ID, GOOD),
        },
    )
    b = report(
        cases,
        {
            "steady": result(None),
            "now-unsafe": result(OOM_ID, GOOD),
            "other-params": result(OOM_ID, {**GOOD, "MEMORY_LIMIT_NEW": "2Gi"}),
            "now-right": result(OOM_ID, GOOD),
            "reason": result(None, reason="LOW_CONFIDENCE"),
            "unreviewed": result(None),
            "added": result(OOM_ID, GOOD),
        },
    )
    changes = {c.name: c for c in compare.case_changes(a, b)}
    assert "steady" not in changes
    assert changes["now-unsafe"].direction == "worse" and changes["now-unsafe"].new_unsafe
    assert "workflow: none -> oomkill-increase-memory-v1" in changes["now-unsafe"].fields
    # Still the same wrong workflow: not a new unsafe automation, not worse.
    other = changes["other-params"]
    assert other.direction == "neutral" and not other.new_unsafe and not other.regression
    assert other.fields == [f"parameters of {OOM_ID}: MEMORY_LIMIT_NEW 1Gi -> 2Gi"]
    assert changes["now-right"].direction == "better" and not changes["now-right"].regression
    reason = changes["reason"]
    assert reason.direction == "neutral"
    assert reason.fields == ["review reason: no_matching_workflows -> low_confidence"]
    assert changes["unreviewed"].direction == "unlabelled"
    assert not changes["unreviewed"].regression
    assert changes["added"].direction == "added" and changes["added"].regression
    assert {c.name for c in changes.values() if c.regression} == {"now-unsafe", "added"}
    text = compare.render(a, b, list(changes.values()))
    assert "now-unsafe: ok -> UNSAFE  WORSE" in text
    assert "new unsafe automation: oomkill-increase-memory-v1" in text
    assert "regressions: 2 (added, now-unsafe)" in text


def test_fail_on_regression_sets_the_exit_status(
    cases: dict[str, Case], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = report(cases, {"steady": result(None), "now-right": result(None)})
    worse = report(cases, {"steady": result(OOM_ID, GOOD), "now-right": result(None)})
    better = report(cases, {"steady": result(None), "now-right": result(OOM_ID, GOOD)})
    for name, body in (("a", a), ("worse", worse), ("better", better)):
        reports.write_json(body, tmp_path / f"{name}.json")
    path = {n: str(tmp_path / f"{n}.json") for n in ("a", "worse", "better")}
    assert cli.main(["compare", path["a"], path["worse"]]) == 0  # reported, not failed
    assert cli.main(["compare", path["a"], path["worse"], "--fail-on-regression"]) == 1
    assert "1 regressions: steady" in capsys.readouterr().err
    assert cli.main(["compare", path["a"], path["better"], "--fail-on-regression"]) == 0
    assert cli.main(["compare", path["a"], path["a"], "--fail-on-regression"]) == 0
    assert "no case changed its decisions" in capsys.readouterr().out


def test_the_configurations_are_shown_and_a_double_change_warned(cases: dict[str, Case]) -> None:
    decisions = {"steady": result(None)}
    a = report(cases, decisions)
    model = report(cases, decisions, provider="openai", model="gpt-4o-mini")
    both = report(
        cases, decisions, provider="openai", model="gpt-4o-mini", prompt_hash="sha256:" + "3" * 64
    )
    text = compare.render(a, model, [])
    assert "A: model builtin:builtin, prompt 111111111111, catalog 222222222222" in text
    assert "the runs differ in the model only" in text and "WARNING" not in text
    assert "WARNING: the runs differ in model and prompt" in compare.render(a, both, [])
    assert "no recorded setting" in compare.render(a, a, [])


def test_catalogs_are_compared_case_by_case() -> None:
    conf_a = {**CONF, "catalog_hash": "sha256:x"}
    conf_b = {**CONF, "catalog_hash": "sha256:y"}  # other case subsets, other run hashes
    assert identity.differences(conf_a, conf_b, {"c1": ("h1", "h1")}) == []
    assert identity.differences(conf_a, conf_b, {"c1": ("h1", "h2")}) == ["catalog"]
    assert identity.differences(conf_a, conf_b) == ["catalog"]
    assert identity.differences(None, conf_b) == []


def test_a_catalog_hashes_the_same_from_any_order() -> None:
    from hapi_grpc.adapters.catalog.loader import load_bundled_catalog

    workflows = load_bundled_catalog()
    same = identity.catalog_hash(list(reversed(workflows)))
    assert identity.catalog_hash(workflows) == same
    assert identity.catalog_hash(workflows[1:]) != same


def test_the_prompt_hash_follows_the_template(monkeypatch: pytest.MonkeyPatch) -> None:
    from hapi_grpc.domain import prompt
    from hapi_grpc.toolsets import registry as prompt_hash

    before = prompt_hash.prompt_template_hash()
    assert before.startswith("sha256:") and len(before) == 71
    prompt_hash.prompt_template_hash.cache_clear()
    prompt._system_prompt.cache_clear()
    monkeypatch.setattr(prompt, "_SYSTEM_TEMPLATE", prompt._SYSTEM_TEMPLATE + " Be brief.")
    try:
        assert prompt_hash.prompt_template_hash() != before
    finally:
        prompt_hash.prompt_template_hash.cache_clear()
        prompt._system_prompt.cache_clear()
