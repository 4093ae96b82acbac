"""The conversation loop: ask the model, run its tool calls, check its answer.

    for each turn, while turns and time remain:
        ask the model (bounded by the budget)
        if it called tools: run them, give it the results, next turn
        else: check its final answer; accepted or terminal: done;
              otherwise tell it what to correct, next turn
    out of turns: the best partial result

Every model text that leaves the process (stream events, logs) is redacted
here, where the turn is recorded. `ResourceExhaustedError` (no model-request
slot in time) propagates to the caller; it is not an investigation result.
"""

from __future__ import annotations

import asyncio
import logging

from hapi_grpc.domain.errors import BudgetExhaustedError, LLMResponseError, LLMUnavailableError
from hapi_grpc.domain.investigation.final_check import check_final_answer
from hapi_grpc.domain.investigation.outcome import StopReason, finished_result, partial_result
from hapi_grpc.domain.investigation.state import InvestigationState
from hapi_grpc.domain.llm import ChatMessage, LLMProvider, LLMResponse, ToolDefinition
from hapi_grpc.domain.prompt import build_messages
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason, LlmTurn
from hapi_grpc.domain.sensitive import clip, redact
from hapi_grpc.domain.toolsets.jsontext import with_notice

__all__ = ["OUT_OF_TIME", "converse"]

logger = logging.getLogger(__name__)

LAST_TURN_NOTICE = "Last turn: do not call tools; reply now with the final JSON answer."
OUT_OF_TIME = StopReason(HumanReviewReason.BUDGET_EXHAUSTED, "the time budget ran out")
# Model text in a stream event or a log line is cut to this many characters.
_SHOWN_TEXT_CHARS = 16_000
_LOGGED_TEXT_CHARS = 4000


async def converse(state: InvestigationState, llm: LLMProvider) -> AnalysisResult:
    """Run the investigation's conversation to its result (see module docstring)."""
    messages = build_messages(
        state.incident,
        max_attempts=state.settings.max_validation_attempts,
        toolsets=state.tools.toolsets,
    )
    tool_defs = state.tools.definitions()
    max_turns = state.settings.max_llm_turns
    for turn in range(1, max_turns + 1):
        response = await _ask_model(state, llm, messages, tool_defs)
        if isinstance(response, StopReason):
            return partial_result(state, response)
        await _record_turn(state, turn, response)
        next_is_last = turn + 1 == max_turns
        if response.tool_calls:
            await _run_tool_calls(state, response, messages, next_is_last)
            continue
        messages.append(ChatMessage("assistant", response.content))
        verdict = await check_final_answer(state, response.content)
        if verdict.accepted or verdict.terminal:
            return finished_result(state, verdict)
        feedback = verdict.feedback + (" This is your last turn." if next_is_last else "")
        messages.append(ChatMessage("user", feedback))
    return partial_result(
        state,
        StopReason(
            HumanReviewReason.BUDGET_EXHAUSTED,
            f"the model did not give an accepted answer within {max_turns} turns",
        ),
    )


async def _run_tool_calls(
    state: InvestigationState,
    response: LLMResponse,
    messages: list[ChatMessage],
    next_is_last: bool,
) -> None:
    messages.append(ChatMessage("assistant", response.content, tool_calls=response.tool_calls))
    for index, call in enumerate(response.tool_calls):
        dispatched = await state.tools.run(call)
        await state.progress.tool_call(dispatched.record)
        if dispatched.attempt is not None:
            await state.progress.attempt(dispatched.attempt)
        content = dispatched.record.result
        if next_is_last and index == len(response.tool_calls) - 1:
            content = with_notice(content, LAST_TURN_NOTICE)
        messages.append(ChatMessage("tool", content, tool_call_id=call.id, name=call.name))


async def _ask_model(
    state: InvestigationState,
    llm: LLMProvider,
    messages: list[ChatMessage],
    tool_defs: list[ToolDefinition],
) -> LLMResponse | StopReason:
    remaining = state.budget.remaining()
    if remaining <= 0:
        return OUT_OF_TIME
    try:
        # The provider clips its own timeouts to the budget; this also
        # bounds a provider that does not.
        async with asyncio.timeout(remaining):
            return await llm.complete(messages, tool_defs)
    except TimeoutError:
        if state.budget.expired:
            return OUT_OF_TIME
        return StopReason(HumanReviewReason.LLM_UNAVAILABLE, "the language model timed out")
    except BudgetExhaustedError:
        return OUT_OF_TIME
    except LLMUnavailableError as exc:
        logger.warning("language model unavailable: %s", clip(redact(exc.message), 512))
        return StopReason(HumanReviewReason.LLM_UNAVAILABLE, "the language model is unavailable")
    except LLMResponseError as exc:
        logger.warning(
            "language model answered with an invalid completion: %s",
            clip(redact(exc.message), 512),
        )
        return StopReason(
            HumanReviewReason.LLM_UNAVAILABLE, "the language model returned an invalid completion"
        )


async def _record_turn(state: InvestigationState, turn: int, response: LLMResponse) -> None:
    state.turns = turn
    state.usage = state.usage + response.usage
    if response.model:
        state.model = clip(response.model, 256)
    shown = redact(response.content)
    # The text is kept for debugging only; it is never executed.
    logger.debug("model turn %d content=%r", turn, clip(shown, _LOGGED_TEXT_CHARS))
    await state.progress.turn(
        LlmTurn(
            turn=turn,
            content=clip(shown, _SHOWN_TEXT_CHARS),
            tool_calls=tuple(clip(redact(call.name), 128) for call in response.tool_calls),
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
        )
    )
