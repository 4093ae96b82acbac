"""The investigation loop, in process: a scripted model (`tests/fakes/investigation.py`)
against real catalogs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest

from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import LLMUnavailableError, ResourceExhaustedError
from hapi_grpc.domain.investigation.engine import EngineSettings, InvestigationEngine
from hapi_grpc.domain.llm import ChatMessage, LLMResponse
from hapi_grpc.domain.result import (
    HumanReviewReason,
    LlmTurn,
    ToolCallRecord,
    ToolCallStatus,
    ValidationAttempt,
    ValidationSource,
)
from hapi_grpc.observability import metrics
from hapi_grpc.observability.investigation import MetricsObserver
from tests.fakes.investigation import (
    CUSTOM_LABELS,
    DETECTED_LABELS,
    GOOD_PARAMS,
    OOM_ID,
    FailingCatalog,
    RecordingCatalog,
    ScriptedLLM,
    SlowCatalog,
    all_text_sent,
    alternative_ids,
    answer_json,
    make_incident,
    run,
    say,
    search,
    search_hit_ids,
    tool,
    validate,
)

# --- the happy path ------------------------------------------------------------------


async def test_search_validate_answer_selects_the_validated_workflow() -> None:
    catalog = RecordingCatalog()
    result, llm, _ = await run(
        [search(), validate(GOOD_PARAMS), say(answer_json())], catalog=catalog
    )

    assert result.needs_human_review is False
    assert result.human_review_reason is None
    selected = result.selected_workflow
    assert selected is not None
    assert (selected.workflow_id, selected.version) == (OOM_ID, "1.0.0")
    assert selected.parameters == GOOD_PARAMS
    assert selected.estimated_risk == "low"
    assert result.remediation_id == "rr-oom-1" and result.incident_id == "fp-1"
    assert result.rca_severity == "critical"
    assert result.context_used is not None and result.context_used.blast_radius == "one deployment"
    assert result.llm_turns == 3
    assert (result.prompt_tokens, result.completion_tokens) == (300, 30)
    assert result.model == "scripted-model-1" and result.language_model_used is True
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.SUCCESS] * 2
    # The final answer repeats what the tool validated: confirmed, not re-validated.
    assert [(a.source, a.valid) for a in result.validation_attempts] == [
        (ValidationSource.TOOL, True)
    ]
    assert result.duration_seconds > 0
    # Tools offered on every turn, in the order of the definitions.
    assert [t.name for t in llm.tools[0]] == [
        "search_workflow_catalog",
        "validate_workflow_parameters",
    ]
    assert len(catalog.queries) == 1
    # The schema the tool validated against is the one the final check gates on.
    assert catalog.schemas == [OOM_ID]


async def test_events_come_in_order_turn_tool_attempt() -> None:
    result, _, events = await run([search(), validate(GOOD_PARAMS), say(answer_json())])

    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "LlmTurn",
        "ToolCallRecord",
        "LlmTurn",
        "ToolCallRecord",
        "ValidationAttempt",
        "LlmTurn",
    ]
    turns = [e for e in events if isinstance(e, LlmTurn)]
    assert [t.turn for t in turns] == [1, 2, 3]
    assert turns[0].tool_calls == ("search_workflow_catalog",)
    assert turns[2].content == answer_json()  # the original text, for debugging
    assert not any(type(e).__name__ == "AnalysisResult" for e in events)
    assert events[1] == result.tool_calls[0]


async def test_model_answering_directly_without_tools_yields_no_workflow() -> None:
    result, llm, _ = await run([say(answer_json(workflow_id=None))])

    assert result.selected_workflow is None
    assert result.needs_human_review is True
    assert result.human_review_reason is HumanReviewReason.NO_MATCHING_WORKFLOWS
    assert result.tool_calls == [] and len(llm.calls) == 1


# --- self-correction -----------------------------------------------------------------


async def test_self_correction_after_invalid_parameters() -> None:
    bad = {**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "2 gigabytes"}
    hallucinated = {**GOOD_PARAMS, "GIT_PASSWORD": "hunter2-secret-value"}
    result, llm, events = await run(
        [
            search(),
            validate(bad),
            validate(hallucinated),
            say(answer_json(parameters=hallucinated)),
        ]
    )

    first = llm.tool_results(2)[-1]
    assert first["status"] == "invalid"
    assert first["errors"][0]["parameter"] == "MEMORY_LIMIT_NEW"
    assert "512Mi" in first["errors"][0]["message"]  # an example to copy
    assert first["attempts_left"] == 2

    assert result.needs_human_review is False
    assert result.selected_workflow is not None
    assert result.selected_workflow.parameters == GOOD_PARAMS  # undeclared GIT_PASSWORD stripped
    attempts = result.validation_attempts
    assert [(a.attempt, a.valid, a.source) for a in attempts] == [
        (1, False, ValidationSource.TOOL),
        (2, True, ValidationSource.TOOL),
    ]
    assert attempts[1].parameters["GIT_PASSWORD"] == "[REDACTED]"
    everything = repr(dataclasses.asdict(result)) + repr(events)
    assert "hunter2-secret-value" not in everything.replace(
        answer_json(parameters=hallucinated), ""
    )


async def test_final_answer_is_checked_and_corrected_without_the_tool() -> None:
    bad = {**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "lots"}
    result, llm, _ = await run(
        [search(), say(answer_json(parameters=bad)), say(answer_json())],
    )

    feedback = llm.calls[2][-1]
    assert feedback.role == "user"
    assert "MEMORY_LIMIT_NEW" in feedback.content and "512Mi" in feedback.content
    assert result.selected_workflow is not None
    assert result.selected_workflow.parameters == GOOD_PARAMS
    assert [(a.valid, a.source) for a in result.validation_attempts] == [
        (False, ValidationSource.FINAL_ANSWER),
        (True, ValidationSource.FINAL_ANSWER),
    ]
    assert result.needs_human_review is False


async def test_three_failed_validations_need_human_review_without_selection() -> None:
    bad = [{**GOOD_PARAMS, "MEMORY_LIMIT_NEW": f"{n} gigabytes"} for n in (1, 2, 3, 4)]
    result, llm, _ = await run(
        [
            search(),
            validate(bad[0]),
            validate(bad[1]),
            validate(bad[2]),
            validate(bad[3]),  # a fourth attempt is refused
            say(answer_json(parameters=bad[3])),
        ]
    )

    assert len(result.validation_attempts) == 3
    assert not any(a.valid for a in result.validation_attempts)
    third = llm.tool_results(4)[-1]
    assert third["attempts_left"] == 0 and "No attempts left" in third["next"]
    assert result.tool_calls[-1].status is ToolCallStatus.LIMIT_EXCEEDED
    assert result.selected_workflow is None
    assert result.needs_human_review is True
    assert result.human_review_reason is HumanReviewReason.PARAMETER_VALIDATION_FAILED
    assert result.alternative_workflows[0].workflow_id == OOM_ID  # kept for humans
    assert result.root_cause_assessment  # the analysis is still there


async def test_model_giving_up_after_three_failures_is_still_a_validation_failure() -> None:
    bad = {**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "big"}
    result, _, _ = await run(
        [
            search(),
            validate(bad),
            validate({**bad, "X": 1}),
            validate({**bad, "Y": 1}),
            say(answer_json(workflow_id=None)),
        ]
    )
    assert result.human_review_reason is HumanReviewReason.PARAMETER_VALIDATION_FAILED
    assert len(result.validation_attempts) == 3


async def test_hallucinated_workflow_id_is_corrected() -> None:
    result, llm, _ = await run(
        [search(), say(answer_json(workflow_id="made-up-workflow")), say(answer_json())]
    )

    feedback = llm.calls[2][-1].content
    assert "made-up-workflow" in feedback and OOM_ID in feedback
    assert result.selected_workflow is not None
    assert result.selected_workflow.workflow_id == OOM_ID
    assert result.needs_human_review is False


async def test_persistent_hallucinated_id_ends_with_workflow_not_found() -> None:
    result, llm, _ = await run([search(), say(answer_json(workflow_id="made-up-workflow"))])

    assert len(llm.calls) == 4  # search + three rejected answers
    assert result.selected_workflow is None
    assert result.human_review_reason is HumanReviewReason.WORKFLOW_NOT_FOUND
    assert all(a.workflow_id != "made-up-workflow" for a in result.alternative_workflows)


async def test_selection_before_any_search_is_sent_back() -> None:
    result, llm, _ = await run([say(answer_json()), search(), say(answer_json())])

    assert "search_workflow_catalog first" in llm.calls[1][-1].content
    assert result.selected_workflow is not None and not result.needs_human_review


async def test_version_mismatch_is_corrected() -> None:
    result, llm, _ = await run(
        [search(), say(answer_json(version="9.9.9")), say(answer_json(version="v1.0"))]
    )

    assert "'1.0.0'" in llm.calls[2][-1].content
    assert result.selected_workflow is not None
    assert result.selected_workflow.version == "1.0.0"


async def test_unparseable_output_then_recovery() -> None:
    result, llm, _ = await run(
        [search(), say("I think the memory limit is too low."), say(answer_json())]
    )

    assert "no JSON object" in llm.calls[2][-1].content
    assert result.selected_workflow is not None
    assert result.needs_human_review is False


async def test_contract_violations_are_listed_for_the_model() -> None:
    broken = json.loads(answer_json())
    broken["selected_workflow"]["confidence"] = 1.7
    broken["rca_severity"] = "apocalyptic"
    result, llm, _ = await run([search(), say(json.dumps(broken)), say(answer_json())])

    feedback = llm.calls[2][-1].content
    assert "selected_workflow.confidence" in feedback and "rca_severity" in feedback
    assert result.selected_workflow is not None


async def test_persistent_unparseable_output_needs_review() -> None:
    result, _, _ = await run([search(), say("no idea")])

    assert result.human_review_reason is HumanReviewReason.LLM_OUTPUT_UNPARSEABLE
    assert result.selected_workflow is None
    assert result.llm_turns == 4


async def test_legacy_playbook_names_are_accepted() -> None:
    legacy = json.loads(answer_json())
    selected = legacy.pop("selected_workflow")
    selected["playbook_id"] = selected.pop("workflow_id")
    legacy["selected_playbook"] = selected
    result, _, _ = await run([search(), say("```json\n" + json.dumps(legacy) + "\n```")])

    assert result.selected_workflow is not None
    assert result.selected_workflow.workflow_id == OOM_ID


# --- review reasons -------------------------------------------------------------------


async def test_low_confidence_keeps_the_selection_but_flags_it() -> None:
    result, _, _ = await run([search(), validate(GOOD_PARAMS), say(answer_json(confidence=0.4))])

    assert result.selected_workflow is not None
    assert result.needs_human_review is True
    assert result.human_review_reason is HumanReviewReason.LOW_CONFIDENCE


async def test_no_matching_workflows() -> None:
    result, llm, _ = await run(
        [search("QuantumFluxCapacitorMeltdown critical"), say(answer_json(workflow_id=None))]
    )

    assert llm.tool_results(1)[0]["workflows"] == []
    assert "hint" in llm.tool_results(1)[0]
    assert result.human_review_reason is HumanReviewReason.NO_MATCHING_WORKFLOWS


async def test_answer_without_analysis_is_inconclusive() -> None:
    result, _, _ = await run(
        [search(), say(answer_json(workflow_id=None, root_cause_assessment=""))]
    )
    assert result.human_review_reason is HumanReviewReason.INVESTIGATION_INCONCLUSIVE


async def test_alternatives_the_catalog_did_not_return_are_dropped() -> None:
    alternatives = [
        {"workflow_id": "oomkill-scale-down-v1", "confidence": 0.6, "rationale": "cheaper"},
        {"workflow_id": "invented-v9", "confidence": 0.5, "rationale": "?"},
    ]
    result, _, _ = await run(
        [search(), validate(GOOD_PARAMS), say(answer_json(alternative_workflows=alternatives))]
    )
    assert [a.workflow_id for a in result.alternative_workflows] == ["oomkill-scale-down-v1"]
    assert any("invented-v9" in w for w in result.warnings)


# --- tool handling ---------------------------------------------------------------------


async def test_bad_arguments_unknown_tools_and_malformed_json_get_actionable_errors() -> None:
    result, llm, _ = await run(
        [
            search(limit=50),
            tool("search_workflow_catalog", '{"query": "OOMKilled critical", '),
            tool("kubectl_get_pods", {"namespace": "payments"}),
            tool("search_workflow_catalog", {"query": "OOMKilled", "colour": "red"}),
            search(),
            say(answer_json()),
        ]
    )

    statuses = [c.status for c in result.tool_calls]
    assert statuses == [
        ToolCallStatus.INVALID_ARGUMENTS,
        ToolCallStatus.INVALID_ARGUMENTS,
        ToolCallStatus.UNKNOWN_TOOL,
        ToolCallStatus.INVALID_ARGUMENTS,
        ToolCallStatus.SUCCESS,
    ]
    results = llm.tool_results(5)
    assert "limit" in results[0]["error"] and "1-10" in results[0]["expected"]
    assert "malformed JSON" in results[1]["error"]
    assert "kubectl_get_pods" in results[2]["error"]
    assert "search_workflow_catalog" in results[2]["error"]
    assert "colour: unknown argument" in results[3]["error"]
    assert result.tool_calls[1].arguments is None  # did not parse
    assert result.tool_calls[0].arguments == {"query": "OOMKilled critical", "limit": 50}
    assert result.selected_workflow is not None  # the conversation went on


async def test_validating_a_workflow_the_search_did_not_return_is_refused() -> None:
    result, llm, _ = await run(
        [validate(GOOD_PARAMS), search(), validate(GOOD_PARAMS), say(answer_json())]
    )
    assert "not returned by search_workflow_catalog" in llm.tool_results(1)[0]["error"]
    assert result.tool_calls[0].status is ToolCallStatus.INVALID_ARGUMENTS
    assert len(result.validation_attempts) == 1  # the refused call was not an attempt


async def test_too_many_proposed_parameters_get_an_actionable_error() -> None:
    flood = {**GOOD_PARAMS, **{f"EXTRA_{n}": n for n in range(70)}}
    result, llm, _ = await run(
        [search(), validate(flood), validate(GOOD_PARAMS), say(answer_json())]
    )

    assert result.tool_calls[1].status is ToolCallStatus.INVALID_ARGUMENTS
    error = llm.tool_results(2)[1]["error"]
    assert "73 parameters" in error and "at most 64" in error
    assert "only the parameters the workflow declares" in error
    assert result.tool_calls[2].status is ToolCallStatus.SUCCESS
    assert result.selected_workflow is not None


async def test_tool_call_cap_refuses_further_calls() -> None:
    catalog = RecordingCatalog()
    queries = [search(f"OOMKilled critical memory {n}") for n in range(4)]
    result, llm, _ = await run(
        [*queries, say(answer_json(workflow_id=None))],
        catalog=catalog,
        settings=EngineSettings(max_tool_calls=2),
    )

    assert [c.status for c in result.tool_calls] == [
        ToolCallStatus.SUCCESS,
        ToolCallStatus.SUCCESS,
        ToolCallStatus.LIMIT_EXCEEDED,
        ToolCallStatus.LIMIT_EXCEEDED,
    ]
    assert "reply now with the final JSON answer" in llm.tool_results(3)[-1]["error"]
    assert len(catalog.queries) == 2


async def test_identical_calls_are_answered_from_the_first_result() -> None:
    catalog = RecordingCatalog()
    result, llm, _ = await run(
        [search(), search(), validate(GOOD_PARAMS), validate(GOOD_PARAMS), say(answer_json())],
        catalog=catalog,
    )

    assert [c.status for c in result.tool_calls] == [
        ToolCallStatus.SUCCESS,
        ToolCallStatus.REPEATED,
        ToolCallStatus.SUCCESS,
        ToolCallStatus.REPEATED,
    ]
    assert len(catalog.queries) == 1
    repeated = llm.tool_results(2)[1]
    assert repeated["workflows"] == llm.tool_results(2)[0]["workflows"]
    assert "Do not repeat" in repeated["notice"]
    assert len(result.validation_attempts) == 1  # a repeated validation is not an attempt


async def test_looping_model_hits_the_turn_limit_with_a_partial_result() -> None:
    catalog = RecordingCatalog()
    result, llm, _ = await run(
        [search()], catalog=catalog, settings=EngineSettings(max_llm_turns=4)
    )

    assert len(llm.calls) == 4 and result.llm_turns == 4
    assert len(catalog.queries) == 1  # repeats were never re-executed
    assert result.needs_human_review is True
    assert result.human_review_reason is HumanReviewReason.BUDGET_EXHAUSTED
    assert result.selected_workflow is None
    assert alternative_ids(result) == search_hit_ids(result)[:3]  # best partial: the hits
    assert "4 turns" in result.analysis_summary
    # The model was warned before its last turn.
    assert "Last turn" in llm.tool_results(3)[-1]["notice"]


async def test_per_tool_timeout_is_reported_and_the_model_continues() -> None:
    catalog = SlowCatalog(delay=5.0)
    result, llm, _ = await run(
        [search(), say(answer_json(workflow_id=None))],
        catalog=catalog,
        settings=EngineSettings(tool_timeout=0.05),
    )

    assert result.tool_calls[0].status is ToolCallStatus.TIMEOUT
    assert llm.tool_results(1)[0]["fallback"] == "continue_without_context"
    assert catalog.cancelled == 1  # the slow request was abandoned, not left running
    assert result.human_review_reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE


async def test_budget_exhaustion_returns_a_partial_result_in_time() -> None:
    async def slow(_: list[ChatMessage]) -> LLMResponse:
        await asyncio.sleep(30)
        return say(answer_json())

    loop = asyncio.get_running_loop()
    started = loop.time()
    with budget_scope(Budget.from_timeout(0.4)):
        result, llm, _ = await run([search(), slow], settings=EngineSettings(answer_margin=0.1))
    elapsed = loop.time() - started

    assert elapsed < 5  # the 30 s model turn was abandoned at the budget
    assert llm.cancelled == 1
    assert result.human_review_reason is HumanReviewReason.BUDGET_EXHAUSTED
    assert alternative_ids(result) == search_hit_ids(result)[:3]


async def test_default_budget_applies_when_the_caller_set_no_deadline() -> None:
    async def slow(_: list[ChatMessage]) -> LLMResponse:
        await asyncio.sleep(30)
        return say(answer_json())

    result, _, _ = await run([slow], settings=EngineSettings(default_budget=0.2))
    assert result.human_review_reason is HumanReviewReason.BUDGET_EXHAUSTED


async def test_llm_unavailable_is_a_result_not_an_error() -> None:
    result, _, _ = await run([LLMUnavailableError("provider returned 503 three times")])

    assert result.needs_human_review is True
    assert result.human_review_reason is HumanReviewReason.LLM_UNAVAILABLE
    assert result.selected_workflow is None
    assert "unavailable" in result.analysis_summary
    assert "503" not in repr(result)  # provider details stay in the logs


async def test_llm_unavailable_mid_investigation_keeps_what_was_found() -> None:
    result, _, _ = await run([search(), LLMUnavailableError("down")])

    assert result.human_review_reason is HumanReviewReason.LLM_UNAVAILABLE
    assert result.tool_calls[0].status is ToolCallStatus.SUCCESS
    assert OOM_ID in alternative_ids(result)
    assert alternative_ids(result) == search_hit_ids(result)[:3]


# --- degraded mode ---------------------------------------------------------------------


async def test_catalog_down_degrades_and_the_model_continues() -> None:
    catalog = FailingCatalog()
    result, llm, _ = await run([search(), say(answer_json(workflow_id=None))], catalog=catalog)

    tool_result = llm.tool_results(1)[0]
    assert tool_result["fallback"] == "continue_without_context"
    assert "unavailable" in tool_result["error"]
    assert "circuit breaker" not in tool_result["error"]  # internals stay internal
    assert result.tool_calls[0].status is ToolCallStatus.ERROR
    assert result.needs_human_review is True
    assert result.human_review_reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE
    assert any("unavailable" in w for w in result.warnings)
    assert result.root_cause_assessment  # the analysis survived


async def test_catalog_down_at_the_final_check_lowers_confidence() -> None:
    catalog = FailingCatalog(schemas_only=True)
    result, _, _ = await run([search(), say(answer_json(confidence=0.9))], catalog=catalog)

    assert result.human_review_reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE
    assert result.selected_workflow is None  # never unvalidated parameters
    assert result.alternative_workflows[0].workflow_id == OOM_ID
    assert result.alternative_workflows[0].confidence == pytest.approx(0.45)


async def test_no_selection_after_a_catalog_failure_is_not_no_match() -> None:
    """The search answered, the schema lookup did not, and the model selected
    nothing: a controller must see a dependency to retry, not a final "no match"."""
    catalog = FailingCatalog(schemas_only=True)
    result, _, _ = await run(
        [search(), validate(GOOD_PARAMS), say(answer_json(workflow_id=None))], catalog=catalog
    )

    assert result.tool_calls[1].status is ToolCallStatus.ERROR
    assert result.selected_workflow is None
    assert result.human_review_reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE


async def test_no_selection_with_a_healthy_catalog_is_no_match() -> None:
    result, _, _ = await run([search(), say(answer_json(workflow_id=None))])

    assert result.human_review_reason is HumanReviewReason.NO_MATCHING_WORKFLOWS


# --- DD-HAPI-001: labels are appended, never shown ----------------------------------------


async def test_custom_and_detected_labels_are_appended_to_every_search() -> None:
    catalog = RecordingCatalog()
    result, llm, _ = await run(
        [
            search(),
            search("OOMKilled critical memory limit", severity="critical", component="deployment"),
            say(answer_json(workflow_id=None)),
        ],
        catalog=catalog,
    )

    assert len(catalog.queries) == 2
    for query in catalog.queries:
        assert query.filters.custom_labels == CUSTOM_LABELS
        assert query.filters.detected_labels == DETECTED_LABELS
        assert query.remediation_id == "rr-oom-1"
        assert (query.filters.environment, query.filters.priority) == ("production", "P0")
    assert catalog.queries[1].filters.severity == "critical"
    assert catalog.queries[1].filters.component == "deployment"
    assert catalog.queries[1].to_wire()["filters"]["custom_labels"] == {
        "constraint": ["cost-constrained"],
        "team": ["name=payments"],
    }

    seen_by_model = all_text_sent(llm)
    for needle in (
        "cost-constrained",
        "name=payments",
        "constraint",
        "gitOpsManaged",
        "argocd-secret-marker",
        "custom_labels",
        "detected_labels",
        "rr-oom-1",
    ):
        assert needle not in seen_by_model, needle
    assert result.tool_calls[0].result.find("cost-constrained") == -1


async def test_empty_labels_are_not_appended() -> None:
    catalog = RecordingCatalog()
    await run(
        [search(), say(answer_json(workflow_id=None))],
        catalog=catalog,
        incident=make_incident(custom_labels={}, detected_labels={}),
    )
    assert "custom_labels" not in catalog.queries[0].to_wire().get("filters", {})


async def test_concurrent_investigations_never_see_each_others_labels() -> None:
    catalog = RecordingCatalog()
    both_searched = asyncio.Barrier(2)

    async def rendezvous(_: list[ChatMessage]) -> LLMResponse:
        await both_searched.wait()  # interleave the two conversations
        return search("OOMKilled critical memory")

    async def one(remediation_id: str, team: str) -> Any:
        llm = ScriptedLLM([search(), rendezvous, say(answer_json(workflow_id=None))])
        engine = InvestigationEngine(catalog, llm)
        return await engine.investigate(
            make_incident(remediation_id, custom_labels={"team": (team,)}, detected_labels={})
        )

    await asyncio.gather(one("rr-a", "alpha"), one("rr-b", "beta"))

    by_id: dict[str, set[tuple[str, ...]]] = {}
    for query in catalog.queries:
        by_id.setdefault(query.remediation_id, set()).add(query.filters.custom_labels["team"])
    assert by_id == {"rr-a": {("alpha",)}, "rr-b": {("beta",)}}
    assert len(catalog.queries) == 4


# --- cancellation ------------------------------------------------------------------------


async def test_cancellation_mid_llm_call_propagates_and_reaches_the_provider() -> None:
    entered = asyncio.Event()

    async def hang(_: list[ChatMessage]) -> LLMResponse:
        entered.set()
        await asyncio.sleep(60)
        raise AssertionError("not reached")

    llm = ScriptedLLM([search(), hang])
    engine = InvestigationEngine(RecordingCatalog(), llm)
    task = asyncio.create_task(engine.investigate(make_incident()))
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert llm.cancelled == 1


async def test_cancellation_mid_tool_call_reaches_the_catalog() -> None:
    catalog = SlowCatalog(delay=60)
    engine = InvestigationEngine(catalog, ScriptedLLM([search(), say(answer_json())]))
    task = asyncio.create_task(engine.investigate(make_incident()))
    for _ in range(500):  # bounded wait for the search to start
        if catalog.queries:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert catalog.cancelled == 1


# --- metrics -----------------------------------------------------------------------------


def _sample(name: str, labels: dict[str, str]) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_metrics_count_investigations_tool_calls_and_attempts() -> None:
    before = {
        "selected": _sample(
            "hapi_investigations_total", {"outcome": "selected", "review_reason": "none"}
        ),
        "search": _sample(
            "holmesgpt_playbook_tool_call_total",
            {"tool": "search_workflow_catalog", "status": "success"},
        ),
        "unknown": _sample("holmesgpt_playbook_tool_call_errors_total", {"tool": "unknown"}),
        "attempt": _sample("hapi_validation_attempts_total", {"source": "tool", "result": "valid"}),
        "catalog": _sample("hapi_investigations_catalog_searched_total", {}),
    }
    await run(
        [search(), tool("nope", {}), validate(GOOD_PARAMS), say(answer_json())],
        observer=MetricsObserver(),
    )
    assert (
        _sample("hapi_investigations_total", {"outcome": "selected", "review_reason": "none"})
        == before["selected"] + 1
    )
    assert (
        _sample(
            "holmesgpt_playbook_tool_call_total",
            {"tool": "search_workflow_catalog", "status": "success"},
        )
        == before["search"] + 1
    )
    assert (
        _sample("holmesgpt_playbook_tool_call_errors_total", {"tool": "unknown"})
        == before["unknown"] + 1
    )
    assert (
        _sample("hapi_validation_attempts_total", {"source": "tool", "result": "valid"})
        == before["attempt"] + 1
    )
    assert _sample("hapi_investigations_catalog_searched_total", {}) == before["catalog"] + 1


def test_settings_reject_nonsense() -> None:
    with pytest.raises(ValueError):
        EngineSettings(max_llm_turns=0)
    with pytest.raises(ValueError):
        EngineSettings(min_confidence=1.5)
    with pytest.raises(ValueError):
        EngineSettings(search_top_k_max=11)


async def test_events_are_the_turns_tool_calls_and_attempts_in_order() -> None:
    _, _, events = await run([search(), validate(GOOD_PARAMS), say(answer_json())])
    assert [type(e) for e in events] == [
        LlmTurn,
        ToolCallRecord,
        LlmTurn,
        ToolCallRecord,
        ValidationAttempt,
        LlmTurn,
    ]
    turns = [e for e in events if isinstance(e, LlmTurn)]
    assert [t.turn for t in turns] == [1, 2, 3]
    assert [t.tool_calls for t in turns] == [
        ("search_workflow_catalog",),
        ("validate_workflow_parameters",),
        (),
    ]


async def test_metrics_are_not_counted_without_an_observer() -> None:
    labels = {"source": "tool", "result": "valid"}
    before = _sample("hapi_validation_attempts_total", labels)
    await run([search(), validate(GOOD_PARAMS), say(answer_json())])
    assert _sample("hapi_validation_attempts_total", labels) == before


async def test_each_validation_attempt_is_counted_once() -> None:
    valid = {"source": "tool", "result": "valid"}
    final = {"source": "final_answer", "result": "invalid"}
    before = (
        _sample("hapi_validation_attempts_total", valid),
        _sample("hapi_validation_attempts_total", final),
    )
    result, _, _ = await run(
        [
            search(),
            validate(GOOD_PARAMS),
            say(answer_json(parameters={**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "lots"})),
            say(answer_json()),
        ],
        observer=MetricsObserver(),
    )
    assert [(a.source, a.valid) for a in result.validation_attempts] == [
        (ValidationSource.TOOL, True),
        (ValidationSource.FINAL_ANSWER, False),
    ]
    assert _sample("hapi_validation_attempts_total", valid) == before[0] + 1
    assert _sample("hapi_validation_attempts_total", final) == before[1] + 1


async def test_no_model_slot_in_time_is_an_error_for_the_caller_not_a_result() -> None:
    with pytest.raises(ResourceExhaustedError):
        await run([ResourceExhaustedError("no model-request slot", retry_after=1.0)])


async def test_drain_ends_a_running_investigation_with_a_partial_result() -> None:
    asking = asyncio.Event()

    async def slow(_: list[ChatMessage]) -> LLMResponse:
        asking.set()
        await asyncio.sleep(30)
        return say(answer_json())

    llm = ScriptedLLM([search(), slow])
    engine = InvestigationEngine(RecordingCatalog(), llm, EngineSettings(tool_timeout=2.0))
    task = asyncio.create_task(engine.investigate(make_incident()))
    await asyncio.wait_for(asking.wait(), 5)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert engine.drain(0.2) == 1
    result = await asyncio.wait_for(task, 5)

    assert loop.time() - started < 2  # not the 30 s turn, not the 300 s default budget
    assert llm.cancelled == 1
    assert result.needs_human_review is True
    assert result.human_review_reason is HumanReviewReason.BUDGET_EXHAUSTED
    assert alternative_ids(result) == search_hit_ids(result)[:3]


async def test_a_turn_with_thousands_of_tool_calls_is_listed_briefly() -> None:
    flood = tool("search_workflow_catalog", {"query": "OOMKilled critical"})
    flood = dataclasses.replace(flood, tool_calls=flood.tool_calls * 5000)
    _, _, events = await run([flood, say(answer_json())])
    first = next(e for e in events if isinstance(e, LlmTurn))
    assert len(first.tool_calls) == 33
    assert first.tool_calls[:32] == ("search_workflow_catalog",) * 32
    assert first.tool_calls[32] == "…[4968 more tool calls]"
