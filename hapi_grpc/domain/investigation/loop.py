"""The conversation loop: ask the model, run its tool calls, check its answer.

Design notes: docs/internals.md (`domain/investigation/loop.py`).
"""

from __future__ import annotations

import logging

from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    ContextOverflowError,
    LLMResponseError,
    LLMUnavailableError,
)
from hapi_grpc.domain.investigation.final_check import check_final_answer
from hapi_grpc.domain.investigation.outcome import StopReason, finished_result, partial_result
from hapi_grpc.domain.investigation.state import InvestigationState
from hapi_grpc.domain.llm import ChatMessage, LLMProvider, LLMResponse, ToolChoice, ToolDefinition
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
# Trim-and-resend rounds after a provider refused a request as too long.
_OVERFLOW_RECOVERIES = 2


async def converse(state: InvestigationState, llm: LLMProvider) -> AnalysisResult:
    """Run the investigation's conversation to its result (docs/internals.md)."""
    messages = build_messages(
        state.incident,
        max_attempts=state.settings.max_validation_attempts,
        toolsets=state.tools.toolsets,
    )
    tool_defs = state.tools.definitions()
    max_turns = state.settings.max_llm_turns
    why = ""
    for turn in range(1, max_turns + 1):
        last = turn == max_turns
        response = await _ask_model(state, llm, messages, tool_defs, "none" if last else "auto")
        if isinstance(response, StopReason):
            return partial_result(state, response)
        await _record_turn(state, turn, response)
        next_is_last = turn + 1 == max_turns
        if response.tool_calls and not last:
            await _run_tool_calls(state, response, messages, next_is_last)
            continue
        if response.tool_calls and not response.content.strip():
            # tool_choice "none" was ignored on the last turn: the calls are not run.
            why = ": it called tools on the last one instead of answering"
            break
        messages.append(ChatMessage("assistant", response.content))
        verdict = await check_final_answer(state, response.content)
        if verdict.accepted or verdict.terminal:
            return finished_result(state, verdict)
        feedback = verdict.feedback + (" This is your last turn." if next_is_last else "")
        messages.append(ChatMessage("user", feedback))
    detail = f"the model did not give an accepted answer within {max_turns} turns{why}"
    return partial_result(state, StopReason(HumanReviewReason.BUDGET_EXHAUSTED, detail))


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
        content = state.window.compact_tool_output(dispatched.record.result)
        if next_is_last and index == len(response.tool_calls) - 1:
            content = with_notice(content, LAST_TURN_NOTICE)
        messages.append(ChatMessage("tool", content, tool_call_id=call.id, name=call.name))


async def _ask_model(
    state: InvestigationState,
    llm: LLMProvider,
    messages: list[ChatMessage],
    tool_defs: list[ToolDefinition],
    tool_choice: ToolChoice,
) -> LLMResponse | StopReason:
    window = state.window
    while True:
        try:
            window.fit(messages, tool_defs)
        except ContextOverflowError as exc:
            return _overflow(exc)
        response = await _complete(state, llm, messages, tool_defs, tool_choice)
        if not isinstance(response, ContextOverflowError):
            if isinstance(response, LLMResponse):
                window.observe(response.usage.prompt_tokens)
            return response
        logger.warning(
            "the model refused the conversation as too long (about %d estimated tokens): %s",
            window.last_estimate,
            clip(redact(response.message), 512),
        )
        if state.overflow_recoveries >= _OVERFLOW_RECOVERIES or not window.after_overflow(messages):
            return _overflow(response)
        state.overflow_recoveries += 1


def _overflow(exc: ContextOverflowError) -> StopReason:
    logger.warning(
        "conversation does not fit the model's context: %s", clip(redact(exc.message), 512)
    )
    return StopReason(
        HumanReviewReason.CONTEXT_WINDOW_EXCEEDED,
        "the conversation no longer fits the model's context window"
        " (set HAPI_LLM_CONTEXT_TOKENS to the model's context size, or use a larger one)",
    )


async def _complete(
    state: InvestigationState,
    llm: LLMProvider,
    messages: list[ChatMessage],
    tool_defs: list[ToolDefinition],
    tool_choice: ToolChoice,
) -> LLMResponse | StopReason | ContextOverflowError:
    remaining = state.budget.remaining()
    if remaining <= 0:
        return OUT_OF_TIME
    try:
        # The provider clips its own timeouts to the budget; one that does not
        # is cut by the engine's cutoff at the end of the budget.
        return await llm.complete(messages, tool_defs, tool_choice=tool_choice)
    except ContextOverflowError as exc:
        return exc
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
            tool_calls=_shown_tool_calls(response),
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
        )
    )


# Names of a turn's tool calls listed on its event; a model may ask for
# thousands in one reply, and the event must stay small.
_SHOWN_TOOL_CALLS = 32


def _shown_tool_calls(response: LLMResponse) -> tuple[str, ...]:
    calls = response.tool_calls
    shown = tuple(clip(redact(call.name), 128) for call in calls[:_SHOWN_TOOL_CALLS])
    if len(calls) > _SHOWN_TOOL_CALLS:
        shown += (f"…[{len(calls) - _SHOWN_TOOL_CALLS} more tool calls]",)
    return shown
