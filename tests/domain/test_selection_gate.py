"""The selection gate in the final check: declared premises on what was observed,
then the extra checks the engine was composed with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hapi_grpc.domain.investigation.engine import EngineSettings, InvestigationEngine
from hapi_grpc.domain.preconditions import Bound, ConditionResult, incident_activation
from hapi_grpc.domain.premises.evaluate import evaluate_premises
from hapi_grpc.domain.result import HumanReviewReason
from hapi_grpc.domain.selection_gate import Candidate, SelectionGate, Veto
from hapi_grpc.toolsets.kubernetes.facts import record_object
from tests.fakes.investigation import (
    GOOD_PARAMS,
    OOM_ID,
    RecordingCatalog,
    ScriptedLLM,
    all_text_sent,
    answer_json,
    bundled_catalog,
    make_incident,
    say,
    search,
    validate,
)


def fresh_conditions(
    gate: SelectionGate, workflow_id: str, declared: Any, params: Mapping[str, Any]
) -> list[ConditionResult]:
    """Every condition of the workflow's premise, evaluated on new variables: what
    the gate's reused activations must agree with."""

    def bound_for(p: Mapping[str, Any], workflow: Any, fields: Any) -> Bound:
        view = gate.observed.activation()
        return Bound(incident_activation(gate.incident), view, dict(p), workflow, fields)

    return evaluate_premises(gate.premises_of(workflow_id, declared, params), bound_for, params)


async def test_without_cluster_evidence_a_state_changing_selection_is_not_automated() -> None:
    llm = ScriptedLLM([search(), say(answer_json(parameters=GOOD_PARAMS))] * 4)
    engine = InvestigationEngine(bundled_catalog(), llm, EngineSettings(tool_timeout=2.0))
    result = await engine.investigate(make_incident())
    assert result.selected_workflow is None
    assert result.needs_human_review
    assert result.human_review_reason is HumanReviewReason.PRECONDITION_NOT_MET
    named = [w for w in result.warnings if "container_oomkilled" in w]
    assert named and "not" in named[0], result.warnings
    # The model was told why, with the attempts it had left.
    assert "cannot be automated" in all_text_sent(llm)


async def test_the_validation_tool_says_which_precondition_failed() -> None:
    llm = ScriptedLLM([search(), validate(GOOD_PARAMS), say(answer_json(workflow_id=None))])
    engine = InvestigationEngine(bundled_catalog(), llm, EngineSettings(tool_timeout=2.0))
    result = await engine.investigate(make_incident())
    verdict = result.tool_calls[1].result
    assert '"automation":"refused"' in verdict and "container_oomkilled" in verdict
    assert result.human_review_reason is HumanReviewReason.PRECONDITION_NOT_MET


async def test_an_extra_check_vetoes_automation_with_its_reason_and_message() -> None:
    seen: list[Candidate] = []

    async def production_needs_review(candidate: Candidate) -> Veto | None:
        seen.append(candidate)
        return Veto(
            HumanReviewReason.POLICY_REQUIRES_REVIEW,
            f"rule 'prod-review': {candidate.workflow_id} in production",
            "policy:prod-review",
        )

    llm = ScriptedLLM([search(), say(answer_json(parameters=GOOD_PARAMS))] * 4)
    engine = InvestigationEngine(
        RecordingCatalog(),  # no declarations: only the extra check can stop it
        llm,
        EngineSettings(tool_timeout=2.0),
        selection_checks=[production_needs_review],
    )
    result = await engine.investigate(make_incident())
    assert result.selected_workflow is None
    assert result.human_review_reason is HumanReviewReason.POLICY_REQUIRES_REVIEW
    assert any("rule 'prod-review'" in w for w in result.warnings)
    assert seen and seen[0].workflow_id == OOM_ID
    assert seen[0].parameters["MEMORY_LIMIT_NEW"] == GOOD_PARAMS["MEMORY_LIMIT_NEW"]


async def test_without_the_extra_check_the_same_selection_is_automated() -> None:
    llm = ScriptedLLM([search(), say(answer_json(parameters=GOOD_PARAMS))])
    engine = InvestigationEngine(RecordingCatalog(), llm, EngineSettings(tool_timeout=2.0))
    result = await engine.investigate(make_incident())
    assert result.selected_workflow is not None and not result.needs_human_review


def test_refuted_names_exactly_the_preconditions_observed_false_with_their_values() -> None:
    """`refuted` (run for every search hit) skips invariants and unexplained unknowns,
    yet reports what the whole gate reports as false, details included."""
    from hapi_grpc.domain.observed import Observed
    from hapi_grpc.domain.selection_gate import SelectionGate

    observed = Observed()
    pod = {
        "kind": "Pod",
        "metadata": {"name": "payment-api-1", "namespace": "payments"},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "api", "resources": {"limits": {"memory": "512Mi"}}}],
        },
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "api", "ready": True, "restartCount": 0, "state": {"running": {}}}
            ],
        },
    }
    record_object(observed, pod)
    record_object(
        observed,
        {
            "kind": "Node",
            "metadata": {"name": "node-1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    )
    catalog = bundled_catalog()
    refuted_any = held_any = False
    for gate, workflow_id in (
        (gate, workflow_id)
        for gate in (
            SelectionGate(make_incident(), observed),
            SelectionGate(make_incident(), Observed()),
        )
        for workflow_id in catalog._schemas
    ):
        schema = catalog._schemas[workflow_id]
        full = fresh_conditions(gate, workflow_id, schema, {})
        expected = [r for r in full if r.kind == "precondition" and r.holds is False]
        assert gate.refuted(workflow_id, schema) == expected, workflow_id
        assert (workflow_id in gate.refutations) == bool(expected)
        refuted_any |= bool(expected)
        held_any |= any(r.holds is True for r in full if r.kind == "precondition")
    # Both cases occur, so both branches were compared.
    assert refuted_any and held_any


def test_the_gate_sees_every_change_to_the_record_and_to_the_parameters() -> None:
    """The gate reuses one activation while nothing changed; a new read or other
    parameters must still be seen by the very next evaluation."""
    from hapi_grpc.domain.observed import Observed
    from hapi_grpc.domain.selection_gate import SelectionGate

    schema = bundled_catalog()._schemas[OOM_ID]
    observed = Observed()
    gate = SelectionGate(make_incident(), observed)
    reusing = gate.reusing()
    reusing.__enter__()

    def state(params: dict[str, str]) -> dict[str, bool | None]:
        # Evaluated on the gate's own activations, the ones it reuses.
        premises = gate.premises_of(OOM_ID, schema, params)
        return {r.name: r.holds for r in evaluate_premises(premises, gate._activation, params)}

    assert "container_oomkilled" in [r.name for r in gate.refuted(OOM_ID, schema)]
    assert state(GOOD_PARAMS)["target_is_observed_deployment"] is False
    record_object(
        observed,
        {
            "kind": "Deployment",
            "apiVersion": "apps/v1",
            "metadata": {"name": "payment-api", "namespace": "payments"},
            "spec": {"template": {"spec": {"containers": [{"name": "api"}]}}},
        },
    )
    assert state(GOOD_PARAMS)["target_is_observed_deployment"] is True
    assert (
        state({**GOOD_PARAMS, "DEPLOYMENT_NAME": "other"})["target_is_observed_deployment"] is False
    )
    assert state(GOOD_PARAMS)["target_is_observed_deployment"] is True
    record_object(
        observed,
        {
            "kind": "Pod",
            "metadata": {"name": "payment-api-1", "namespace": "payments"},
            "spec": {"containers": [{"name": "api"}]},
            "status": {
                "containerStatuses": [
                    {
                        "name": "api",
                        "restartCount": 3,
                        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                    }
                ]
            },
        },
    )
    assert "container_oomkilled" not in [r.name for r in gate.refuted(OOM_ID, schema)]
    assert gate._bound
    reusing.__exit__(None, None, None)
    # Nothing converted is kept past it: that would cost memory per investigation.
    assert not gate._bound
    gate.refuted(OOM_ID, schema)
    assert not gate._bound
