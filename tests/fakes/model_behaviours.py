"""What real models do, as steps for `ScriptedLLMServer` (`tests/fakes/scripted_llm.py`).

Seen with llama.cpp's `llama-server` and a small model: the server refuses a
conversation past its context (`context_limited`), the model keeps calling
tools when told to answer (`keeps_calling_tools`), writes prose instead of the
JSON contract (`RAMBLE`), and repeats an identical call. Each helper returns a
step or a callable step, so a script mixes them with plain `Step`s.

Token counts on the server side are `len(JSON of messages and tools) / 4`, the
usual bytes-per-token of real tokenizers on English text (the engine's own
estimate is deliberately more cautious).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes.scripted_llm import Step, StepLike

# Written the way llama.cpp's server answers (HTTP 500, older builds).
LLAMA_CPP_OVERFLOW = "Context size has been exceeded."
RAMBLE = (
    "Well, looking at the incident there are many possible causes to consider, such as"
    " memory, configuration and the network. I think we should look into it further and"
    " maybe restart the pod or increase the memory, it depends on the situation."
)

SEARCH = "search_workflow_catalog"
VALIDATE = "validate_workflow_parameters"


def prompt_tokens(request_json: dict[str, Any]) -> int:
    """The request's prompt size as this fake server counts it."""
    size = len(json.dumps(request_json.get("messages", []), ensure_ascii=False))
    size += len(json.dumps(request_json.get("tools", []), ensure_ascii=False))
    size += len(json.dumps(request_json.get("system", ""), ensure_ascii=False))
    return size // 4


def context_limited(
    limit: int,
    then: StepLike,
    *,
    seen: list[int] | None = None,
    refusal: Callable[[int], Step] | None = None,
) -> Callable[[dict[str, Any]], Step]:
    """Plays `then` while the prompt fits `limit` tokens; past it, refuses like llama.cpp.

    `seen` collects each request's token count; `refusal(tokens)` replaces the
    llama.cpp answer (HTTP 500 "Context size has been exceeded.").
    """

    def step(request_json: dict[str, Any]) -> Step:
        tokens = prompt_tokens(request_json)
        if seen is not None:
            seen.append(tokens)
        if tokens > limit:
            return refusal(tokens) if refusal else Step.error(500, LLAMA_CPP_OVERFLOW)
        return then if isinstance(then, Step) else then(request_json)

    return step


def anthropic_prompt_too_long(limit: int) -> Callable[[int], Step]:
    """Anthropic's refusal: 400 invalid_request_error "prompt is too long: N tokens > M maximum"."""
    return lambda tokens: Step.error(400, f"prompt is too long: {tokens} tokens > {limit} maximum")


def openai_context_length_exceeded(limit: int) -> Callable[[int], Step]:
    """OpenAI's refusal: 400 with code context_length_exceeded."""
    return lambda tokens: Step.error(
        400,
        body={
            "error": {
                "message": f"This model's maximum context length is {limit} tokens. However,"
                f" your messages resulted in {tokens} tokens. Please reduce the length of"
                " the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    )


def search_step(query: str) -> Step:
    return Step.tool_calls([(SEARCH, {"query": query})])


def keeps_calling_tools(*, obeys_tool_choice: bool, answer: str = "") -> StepLike:
    """A model that calls a tool on every turn; with `obeys_tool_choice`, a request
    with tool_choice "none" gets `answer` instead (what the server enforces)."""
    counter = iter(range(1, 1_000_000))

    def step(request_json: dict[str, Any]) -> Step:
        forbidden = request_json.get("tool_choice") in ("none", {"type": "none"})
        if forbidden and obeys_tool_choice:
            return Step.text(answer)
        return search_step(f"OOMKilled memory attempt {next(counter)}")

    return step
