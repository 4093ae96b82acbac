"""What real models need from the engine (issue 15), over real HTTP.

The engine talks through the real provider adapters to scripted servers
(`tests/fakes/scripted_llm.py`) that behave like a small model behind
llama.cpp's server: a context that overflows, tool calls on the last turn,
prose instead of JSON, identical calls repeated, and slow completions.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from hapi_grpc.adapters.llm.anthropic import AnthropicProvider
from hapi_grpc.adapters.llm.error_body import is_context_overflow
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.investigation.engine import EngineSettings, InvestigationEngine
from hapi_grpc.domain.llm import LLMProvider
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason, ToolCallStatus
from tests.fakes.investigation import (
    GOOD_PARAMS,
    OOM_ID,
    answer_json,
    bundled_catalog,
    make_incident,
)
from tests.fakes.model_behaviours import (
    RAMBLE,
    SEARCH,
    VALIDATE,
    anthropic_prompt_too_long,
    context_limited,
    keeps_calling_tools,
    openai_context_length_exceeded,
    search_step,
)
from tests.fakes.scripted_llm import ScriptedLLMServer, Step

TRIM_NOTE = "[trimmed to fit the model's context window"


def openai(server: ScriptedLLMServer, **options: Any) -> OpenAICompatibleProvider:
    options.setdefault("backoff_base", 0.01)
    return OpenAICompatibleProvider(server.base_url, "small-model", **options)


async def investigate(
    llm: LLMProvider, settings: EngineSettings, *, budget: float | None = None
) -> AnalysisResult:
    engine = InvestigationEngine(bundled_catalog(declarations=False), llm, settings)
    try:
        if budget is None:
            return await engine.investigate(make_incident())
        with budget_scope(Budget.from_timeout(budget)):
            return await engine.investigate(make_incident())
    finally:
        await llm.close()


def sent_text(server: ScriptedLLMServer, index: int) -> str:
    return json.dumps(server.requests[index].json)


# --- 1. the context window -------------------------------------------------------------


async def test_known_context_keeps_every_request_under_it_by_trimming_old_tool_results() -> None:
    limit = 3000 - 256  # the server's prompt limit: the context less the answer
    seen: list[int] = []
    steps: list[Step] = [
        search_step("OOMKilled critical"),
        search_step("memory limit"),
        search_step("crash loop"),
        search_step("disk pressure"),
        Step.tool_calls([(VALIDATE, {"workflow_id": OOM_ID, "parameters": GOOD_PARAMS})]),
        Step.text(answer_json()),
    ]
    script = [context_limited(limit, step, seen=seen) for step in steps]
    settings = EngineSettings(context_tokens=3000, completion_tokens=256)
    async with ScriptedLLMServer("openai", script) as server:
        result = await investigate(openai(server, max_tokens=256), settings)

    assert max(seen) <= limit, seen  # the server never had to refuse
    assert len(server.requests) == len(steps)
    assert result.selected_workflow is not None and result.selected_workflow.workflow_id == OOM_ID
    assert result.needs_human_review is False
    later = sent_text(server, len(steps) - 1)
    assert TRIM_NOTE in later and "search_workflow_catalog result" in later
    # A result larger than a quarter of the budget was cut as it arrived ...
    everything = "".join(sent_text(server, i) for i in range(len(steps)))
    assert "cut to fit the model's context window" in everything
    # ... while the record keeps it whole.
    assert max(len(r.result) for r in result.tool_calls) > 3000


async def test_llama_cpp_overflow_500_is_not_retried_the_conversation_is_trimmed_and_resent() -> (
    None
):
    seen: list[int] = []
    answer = Step.text(answer_json())
    script = [
        context_limited(2200, step, seen=seen)
        for step in (search_step("OOMKilled critical"), search_step("memory limit"), answer, answer)
    ]
    settings = EngineSettings()  # context size unknown: the server's refusal is the signal
    async with ScriptedLLMServer("openai", script) as server:
        result = await investigate(openai(server, max_retries=2), settings)

    assert len(server.requests) == 4, seen
    assert seen[2] > 2200 >= seen[3]  # one refusal, then a smaller request, no identical resend
    assert TRIM_NOTE not in sent_text(server, 2) and TRIM_NOTE in sent_text(server, 3)
    assert result.selected_workflow is not None and result.needs_human_review is False


@pytest.mark.parametrize(
    "refusal",
    [
        None,  # llama.cpp: 500 "Context size has been exceeded."
        openai_context_length_exceeded(1000),
        lambda tokens: Step.error(
            400,
            body={
                "error": {
                    "code": 400,
                    "message": f"request ({tokens} tokens) exceeds the available context"
                    " size (1000 tokens), try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": tokens,
                    "n_ctx": 1000,
                }
            },
        ),
    ],
    ids=["llama-cpp-500", "openai-400", "llama-cpp-400"],
)
async def test_overflow_with_nothing_to_trim_ends_with_its_own_reason(refusal: Any) -> None:
    script = [context_limited(1000, Step.text(answer_json()), refusal=refusal)] * 5
    async with ScriptedLLMServer("openai", script) as server:
        result = await investigate(openai(server, max_retries=2), EngineSettings())

    assert len(server.requests) == 1  # never retried
    assert result.human_review_reason is HumanReviewReason.CONTEXT_WINDOW_EXCEEDED
    assert any("context window" in w for w in result.warnings)


async def test_anthropic_prompt_too_long_ends_with_the_context_reason() -> None:
    script = [
        context_limited(1000, Step.text(answer_json()), refusal=anthropic_prompt_too_long(1000))
    ]
    async with ScriptedLLMServer("anthropic", script * 3) as server:
        llm = AnthropicProvider(server.base_url, "claude-test", "sk-ant", backoff_base=0.01)
        result = await investigate(llm, EngineSettings())

    assert len(server.requests) == 1
    assert result.human_review_reason is HumanReviewReason.CONTEXT_WINDOW_EXCEEDED


async def test_prompt_larger_than_a_known_context_is_never_sent() -> None:
    async with ScriptedLLMServer("openai", [Step.text(answer_json())]) as server:
        settings = EngineSettings(context_tokens=1200, completion_tokens=256)
        result = await investigate(openai(server), settings)

    assert server.requests == []
    assert result.human_review_reason is HumanReviewReason.CONTEXT_WINDOW_EXCEEDED


def test_overflow_bodies_of_each_provider_are_recognised_and_others_are_not() -> None:
    assert is_context_overflow(500, '{"error":{"message":"Context size has been exceeded."}}')
    assert is_context_overflow(400, '{"error":{"code":"context_length_exceeded"}}')
    assert is_context_overflow(400, "This model's maximum context length is 8192 tokens.")
    assert is_context_overflow(400, '{"error":{"message":"prompt is too long: 3 > 2 maximum"}}')
    assert not is_context_overflow(500, '{"error":{"message":"model is loading"}}')
    assert not is_context_overflow(429, "maximum context length")  # a rate limit stays transient


# --- 2. the last turn offers no tools ------------------------------------------------------


async def test_last_turn_sends_tool_choice_none_and_a_model_that_obeys_answers() -> None:
    script = [keeps_calling_tools(obeys_tool_choice=True, answer=answer_json(workflow_id=None))] * 3
    async with ScriptedLLMServer("openai", script) as server:
        result = await investigate(openai(server), EngineSettings(max_llm_turns=3))

    choices = [r.json.get("tool_choice") for r in server.requests]
    assert choices == ["auto", "auto", "none"]
    assert "tools" in server.requests[-1].json  # still described: the history calls them
    assert result.human_review_reason is HumanReviewReason.NO_MATCHING_WORKFLOWS
    assert result.root_cause_assessment  # an answer, not a partial result


async def test_model_ignoring_tool_choice_none_ends_with_a_clear_reason_and_no_extra_calls() -> (
    None
):
    script = [keeps_calling_tools(obeys_tool_choice=False)] * 3
    async with ScriptedLLMServer("openai", script) as server:
        result = await investigate(openai(server), EngineSettings(max_llm_turns=3))

    assert server.requests[-1].json["tool_choice"] == "none"
    assert len(server.requests) == 3
    assert len(result.tool_calls) == 2  # the last turn's call was not run
    assert result.human_review_reason is HumanReviewReason.BUDGET_EXHAUSTED
    assert any("called tools on the last one" in w for w in result.warnings)


async def test_anthropic_last_turn_forbids_tools_with_tool_choice_none() -> None:
    script = [keeps_calling_tools(obeys_tool_choice=True, answer=answer_json(workflow_id=None))] * 2
    async with ScriptedLLMServer("anthropic", script) as server:
        llm = AnthropicProvider(server.base_url, "claude-test", "sk-ant")
        result = await investigate(llm, EngineSettings(max_llm_turns=2))

    first, last = server.requests[0].json, server.requests[-1].json
    assert "tool_choice" not in first and first["tools"]
    assert last["tool_choice"] == {"type": "none"} and last["tools"]
    assert result.human_review_reason is HumanReviewReason.NO_MATCHING_WORKFLOWS


# --- 3. format repair has its own budget ---------------------------------------------------


async def test_rambling_model_spends_format_repairs_not_validation_attempts() -> None:
    async with ScriptedLLMServer("openai", [Step.text(RAMBLE)] * 10) as server:
        result = await investigate(openai(server), EngineSettings())

    assert len(server.requests) == 3  # the answer and two repairs (the default)
    assert result.human_review_reason is HumanReviewReason.LLM_OUTPUT_UNPARSEABLE
    assert result.validation_attempts == []
    assert "Format corrections left after this one: 0" in sent_text(server, 2)


async def test_after_rambling_all_three_validation_attempts_remain() -> None:
    bad = Step.text(answer_json(parameters={**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "lots"}))
    script = [
        Step.text(RAMBLE),
        Step.text(RAMBLE),
        search_step("OOMKilled critical"),
        bad,
        bad,
        bad,
    ]
    async with ScriptedLLMServer("openai", script) as server:
        result = await investigate(openai(server), EngineSettings())

    assert len(result.validation_attempts) == 3
    assert not any(a.valid for a in result.validation_attempts)
    assert result.human_review_reason is HumanReviewReason.PARAMETER_VALIDATION_FAILED


# --- 4. repeated identical calls are counted -----------------------------------------------


async def test_identical_repeats_count_against_the_cap_and_the_model_is_told_to_answer() -> None:
    same = search_step("OOMKilled critical")
    async with ScriptedLLMServer("openai", [same] * 8) as server:
        settings = EngineSettings(max_tool_calls=4, max_llm_turns=7)
        result = await investigate(openai(server), settings)

    statuses = [r.status for r in result.tool_calls]
    assert statuses == [
        ToolCallStatus.SUCCESS,
        ToolCallStatus.REPEATED,
        ToolCallStatus.REPEATED,
        ToolCallStatus.REPEATED,
        ToolCallStatus.LIMIT_EXCEEDED,
        ToolCallStatus.LIMIT_EXCEEDED,
    ]
    counted = [s for s in statuses if s is not ToolCallStatus.LIMIT_EXCEEDED]
    assert len(counted) == 4  # the cap
    # The second repeat (the third identical call) tells the model to answer now.
    assert "reply now with the final JSON answer" not in sent_text(server, 2)
    assert "repeated this identical call 2 times" in sent_text(server, 3)


# --- 5. timeouts and retries fit the budget ------------------------------------------------


async def test_a_timed_out_completion_is_retried_only_while_a_full_attempt_fits() -> None:
    slow = Step.text(answer_json(), delay=10.0)
    async with ScriptedLLMServer("openai", [slow] * 5) as server:
        llm = openai(server, request_timeout=1.0, max_retries=2)
        started = time.monotonic()
        result = await investigate(llm, EngineSettings(answer_margin=0.0), budget=2.6)
        elapsed = time.monotonic() - started

    # Attempt 1 times out at ~1.0 s and 1.6 s still hold a full attempt: retried.
    # Attempt 2 times out at ~2.0 s; 0.6 s cannot hold one: no third, clipped attempt.
    assert len(server.requests) == 2
    assert elapsed < 2.6 + 0.5
    assert result.human_review_reason is HumanReviewReason.LLM_UNAVAILABLE


async def test_no_attempt_starts_with_less_than_the_minimum_attempt_time() -> None:
    async with ScriptedLLMServer("openai", [Step.text(answer_json())]) as server:
        llm = openai(server, request_timeout=5.0, min_attempt_seconds=2.0)
        result = await investigate(llm, EngineSettings(answer_margin=0.0), budget=1.0)

    assert server.requests == []
    assert result.human_review_reason is HumanReviewReason.BUDGET_EXHAUSTED


async def test_repeat_answers_still_reach_the_model() -> None:
    """A repeat is answered from the earlier result (never re-executed)."""
    same = search_step("OOMKilled critical")
    async with ScriptedLLMServer("openai", [same, same, Step.text(answer_json())]) as server:
        result = await investigate(openai(server), EngineSettings())

    assert [r.name for r in result.tool_calls] == [SEARCH, SEARCH]
    assert result.tool_calls[1].status is ToolCallStatus.REPEATED
    assert OOM_ID in sent_text(server, 2)
