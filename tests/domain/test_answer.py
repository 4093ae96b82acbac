"""Finding and shape-checking the model's final answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hapi_grpc.domain.answer import AnswerFormatError, extract_json_object, parse_final_answer

ANSWER: dict[str, Any] = {
    "analysis_summary": "OOMKilled repeatedly",
    "root_cause_assessment": "memory limit too low",
    "rca_severity": "high",
    "selected_workflow": {
        "workflow_id": "oomkill-increase-memory-v1",
        "version": "1.0.0",
        "confidence": 0.85,
        "rationale": "steady growth to the limit",
        "estimated_risk": "low",
        "parameters": {"NAMESPACE": "prod", "REPLICAS": 3},
    },
    "alternative_workflows": [
        {"workflow_id": "oomkill-scale-down-v1", "confidence": 0.6, "rationale": "cheaper"}
    ],
    "warnings": ["temporary if it is a leak"],
    "context_used": {"cluster_state": "ok", "resource_availability": "ok", "blast_radius": "one"},
    "target_resource": {
        "namespace": "prod",
        "kind": "Deployment",
        "name": "api",
        "api_group": "apps",
    },
}
TEXT = json.dumps(ANSWER)


@pytest.mark.parametrize(
    "wrapped",
    [
        TEXT,
        f"  {TEXT}\n",
        f"```json\n{TEXT}\n```",
        f"```\n{TEXT}\n```",
        f"Here is my analysis.\n\n```json\n{TEXT}\n```\nLet me know.",
        f"After investigating {{the pod}} I conclude: {TEXT} -- end {{of answer}}",
        f'Scratch: {{"draft": true}} final: {TEXT}',
    ],
    ids=["bare", "padded", "fenced", "fence-no-lang", "fenced-in-prose", "prose", "two-objects"],
)
def test_the_answer_is_found_however_it_is_wrapped(wrapped: str) -> None:
    assert extract_json_object(wrapped) == ANSWER


def test_braces_inside_strings_do_not_confuse_the_scan() -> None:
    tricky = {**ANSWER, "analysis_summary": 'saw "}{" and \\" in logs {'}
    assert extract_json_object("prefix " + json.dumps(tricky) + " suffix") == tricky


def test_no_object_or_hostile_input_gives_nothing() -> None:
    assert extract_json_object("no json here") is None
    assert extract_json_object("[1, 2, 3]") is None
    assert extract_json_object("{" * 100_000) is None
    assert extract_json_object("{}" * 100_000) == {}


def test_parse_returns_the_typed_answer() -> None:
    answer = parse_final_answer(TEXT)
    assert answer.rca_severity == "high"
    assert answer.selected is not None
    assert answer.selected.parameters == {"NAMESPACE": "prod", "REPLICAS": 3}
    assert answer.alternatives[0].workflow_id == "oomkill-scale-down-v1"
    assert answer.target_resource is not None and answer.target_resource.api_group == "apps"
    assert answer.context_used is not None and answer.context_used.blast_radius == "one"
    assert answer.warnings == ("temporary if it is a leak",)


def test_legacy_selected_playbook_and_playbook_id() -> None:
    legacy = dict(ANSWER)
    selected = dict(legacy.pop("selected_workflow"))
    selected["playbook_id"] = selected.pop("workflow_id")
    legacy["selected_playbook"] = selected
    legacy["alternative_playbooks"] = [{"playbook_id": "oomkill-scale-down-v1", "confidence": 0.5}]
    del legacy["alternative_workflows"]
    answer = parse_final_answer(json.dumps(legacy))
    assert answer.selected is not None
    assert answer.selected.workflow_id == "oomkill-increase-memory-v1"
    assert [a.workflow_id for a in answer.alternatives] == ["oomkill-scale-down-v1"]


def test_legacy_strategies_list_first_is_selected_rest_alternatives() -> None:
    legacy = {
        k: v for k, v in ANSWER.items() if k not in ("selected_workflow", "alternative_workflows")
    }
    first = {**ANSWER["selected_workflow"]}
    first["playbook_id"] = first.pop("workflow_id")
    second = {
        "playbook_id": "other-v1",
        "confidence": 0.7,
        "rationale": "r",
        "estimated_risk": "medium",
    }
    legacy["strategies"] = [first, second]
    answer = parse_final_answer(json.dumps(legacy))
    assert answer.selected is not None and answer.selected.workflow_id == first["playbook_id"]
    assert [a.workflow_id for a in answer.alternatives] == ["other-v1"]
    empty = parse_final_answer(json.dumps({**legacy, "strategies": []}))
    assert empty.selected is None


def test_case_and_null_leniency() -> None:
    text = json.dumps(
        {
            **ANSWER,
            "rca_severity": " Critical ",
            "selected_workflow": {
                **ANSWER["selected_workflow"],
                "estimated_risk": "LOW",
                "parameters": None,
                "version": 1,
            },
            "warnings": None,
            "alternative_workflows": None,
            "target_resource": "prod/apps/StatefulSet/db",
        }
    )
    answer = parse_final_answer(text)
    assert answer.rca_severity == "critical"
    assert answer.selected is not None
    assert (
        answer.selected.estimated_risk,
        answer.selected.parameters,
        answer.selected.version,
    ) == ("low", {}, "1")
    assert answer.warnings == () and answer.alternatives == ()
    assert answer.target_resource is not None
    assert (answer.target_resource.namespace, answer.target_resource.api_group) == ("prod", "apps")


def test_null_selection_is_a_valid_answer() -> None:
    answer = parse_final_answer(json.dumps({**ANSWER, "selected_workflow": None}))
    assert answer.selected is None
    assert (
        parse_final_answer(
            json.dumps({k: v for k, v in ANSWER.items() if k != "selected_workflow"})
        ).selected
        is None
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"analysis_summary": None}, "analysis_summary"),
        ({"rca_severity": "severe"}, "rca_severity"),
        (
            {"selected_workflow": {**ANSWER["selected_workflow"], "confidence": 1.2}},
            "selected_workflow.confidence",
        ),
        (
            {"selected_workflow": {**ANSWER["selected_workflow"], "confidence": -0.1}},
            "selected_workflow.confidence",
        ),
        (
            {"selected_workflow": {**ANSWER["selected_workflow"], "estimated_risk": "extreme"}},
            "selected_workflow.estimated_risk",
        ),
        (
            {"selected_workflow": {**ANSWER["selected_workflow"], "workflow_id": ""}},
            "selected_workflow.workflow_id",
        ),
        (
            {"selected_workflow": {**ANSWER["selected_workflow"], "parameters": [1]}},
            "selected_workflow.parameters",
        ),
        (
            {"alternative_workflows": [{"workflow_id": "x", "confidence": 3}]},
            "alternative_workflows.0.confidence",
        ),
    ],
)
def test_contract_violations_name_the_field(change: dict[str, Any], expected: str) -> None:
    with pytest.raises(AnswerFormatError) as caught:
        parse_final_answer(json.dumps({**ANSWER, **change}))
    assert any(p.startswith(expected + ":") for p in caught.value.problems), caught.value.problems


def test_missing_required_fields_are_reported_as_missing() -> None:
    with pytest.raises(AnswerFormatError) as caught:
        parse_final_answer('{"selected_workflow": null}')
    assert "root_cause_assessment: required field is missing" in caught.value.problems


def test_text_without_json_asks_for_the_json_object() -> None:
    with pytest.raises(AnswerFormatError) as caught:
        parse_final_answer("The root cause is a memory leak.")
    assert "no JSON object" in caught.value.problems[0]


def test_oversized_text_fields_are_clipped() -> None:
    answer = parse_final_answer(json.dumps({**ANSWER, "analysis_summary": "a" * 100_000}))
    assert len(answer.analysis_summary) == 4000


def test_target_resource_text_is_bounded_and_redacted() -> None:
    target = {
        "namespace": "prod",
        "kind": "Deployment",
        "name": "x" * 20_000,
        "api_group": "apps GIT_PASSWORD=hunter2-correct-horse",
    }
    answer = parse_final_answer(json.dumps({**ANSWER, "target_resource": target}))
    assert answer.target_resource is not None
    assert len(answer.target_resource.name) <= 4000
    assert "hunter2-correct-horse" not in answer.target_resource.api_group


def test_action_types_come_from_the_catalog_never_from_the_answer() -> None:
    selected = {**ANSWER["selected_workflow"], "action_type": "DeletePod"}
    alternative = {"workflow_id": "oomkill-scale-down-v1", "action_type": "DeletePod"}
    answer = parse_final_answer(
        json.dumps(
            {**ANSWER, "selected_workflow": selected, "alternative_workflows": [alternative]}
        )
    )
    assert answer.selected is not None and answer.selected.action_type == ""
    assert answer.alternatives[0].action_type == ""
