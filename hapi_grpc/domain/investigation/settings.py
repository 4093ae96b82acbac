"""Bounds and thresholds of an investigation."""

from __future__ import annotations

from dataclasses import dataclass

from hapi_grpc.domain.catalog import TOP_K_MAX

__all__ = ["EngineSettings"]


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Bounds and thresholds of an investigation.

    The wall-clock budget is the caller's deadline (or `default_budget` when
    there is none), never more than `max_budget`, minus `answer_margin`; the
    margin never takes more than a quarter of what is left, so a short
    deadline still leaves time to work.
    `max_tool_calls` and `tool_timeout` are the `workflow_catalog` toolset's
    limits.

    `max_format_repairs`: answers that do not parse as the JSON contract are
    sent back this many times; they never spend the parameter-validation
    attempts (BR-HAPI-191). `context_tokens` is the model's context window
    (None: unknown, nothing is trimmed ahead, a provider's overflow error still
    ends the investigation cleanly); `completion_tokens` of it are kept for
    the answer (the request's max_tokens).
    """

    max_tool_calls: int = 10
    max_llm_turns: int = 12
    tool_timeout: float = 10.0
    answer_margin: float = 1.0
    default_budget: float = 300.0  # when the caller set no deadline
    max_budget: float = 300.0  # whatever deadline the caller set
    min_confidence: float = 0.7
    max_validation_attempts: int = 3
    search_top_k_max: int = TOP_K_MAX
    max_format_repairs: int = 2
    context_tokens: int | None = None
    completion_tokens: int = 2048

    def __post_init__(self) -> None:
        if self.max_tool_calls < 0 or self.max_llm_turns < 1 or self.max_validation_attempts < 1:
            raise ValueError("max_llm_turns and max_validation_attempts must be >= 1")
        if min(self.tool_timeout, self.default_budget, self.max_budget) <= 0 or (
            self.answer_margin < 0
        ):
            raise ValueError("timeouts and budgets must be positive")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError("min_confidence must be in [0, 1]")
        if not 1 <= self.search_top_k_max <= TOP_K_MAX:
            raise ValueError(f"search_top_k_max must be in [1, {TOP_K_MAX}]")
        if self.max_format_repairs < 0 or self.completion_tokens < 1:
            raise ValueError("max_format_repairs must be >= 0 and completion_tokens >= 1")
        if self.context_tokens is not None and self.context_tokens <= self.completion_tokens:
            raise ValueError("context_tokens must exceed the completion_tokens kept for the answer")
