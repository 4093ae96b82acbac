"""Settings of the language model (`HAPI_LLM_*`)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from hapi_grpc.domain.toolsets.settings import check_url

__all__ = ["LlmSettings"]


class LlmSettings(BaseModel):
    """The model investigations converse with: `builtin` (the built-in analyst, no model),
    an OpenAI-compatible server or Anthropic's API, and the bounds of its requests."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    llm_provider: Literal["builtin", "openai", "anthropic"] = Field(
        "builtin",
        description=(
            "`builtin`, `openai` (any OpenAI-compatible server) or `anthropic` (`--llm-provider`)."
        ),
    )
    llm_base_url: str | None = Field(
        None,
        description=(
            "e.g. `https://api.openai.com/v1`, `http://vllm:8000/v1`, `http://ollama:11434/v1` "
            "(`--llm-base-url`)."
        ),
    )
    llm_model: str | None = Field(None, description="Model name (`--llm-model`).")
    llm_api_key: SecretStr | None = Field(None, description="API key (prefer the file variant).")
    llm_api_key_file: str | None = Field(
        None, description="File holding the API key (a mounted Secret)."
    )
    llm_auth_style: Literal["bearer", "api-key"] = Field(
        "bearer", description="`bearer` (Authorization header) or `api-key` (Azure OpenAI)."
    )
    llm_extra_headers: dict[str, str] = Field(
        default_factory=dict, description="JSON object of extra HTTP headers."
    )
    llm_extra_query: dict[str, str] = Field(
        default_factory=dict,
        description='JSON object of extra query parameters, e.g. `{"api-version": "2024-10-21"}`.',
    )
    llm_timeout_seconds: float = Field(
        120.0, gt=0, description="Per-request timeout (clipped to the caller's deadline)."
    )
    llm_max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description=(
            "Retries on timeouts, 5xx and 429 (Retry-After honoured up to 60 s, within the "
            "budget). A timed-out request is retried only while the budget still holds a full "
            "`HAPI_LLM_TIMEOUT_SECONDS`; a context-overflow answer is never retried."
        ),
    )
    llm_max_concurrent_requests: int = Field(
        1000,
        ge=1,
        le=100_000,
        description=(
            "Model requests in flight at most, and the size of the connection pool. Set it to "
            "your provider's concurrency limit: further calls wait for a slot inside their "
            "deadline, then answer `RESOURCE_EXHAUSTED` with `RetryInfo`."
        ),
    )
    llm_temperature: float | None = Field(0.0, ge=0, le=2, description="Sampling temperature.")
    llm_max_tokens: int | None = Field(2048, ge=1, description="Completion token cap per turn.")
    llm_context_tokens: int | None = Field(
        None,
        ge=1024,
        description=(
            "The model's context window in tokens. When set, each request is kept under it less "
            "`HAPI_LLM_MAX_TOKENS`: tool results are cut to a quarter of that, and the oldest "
            "tool results (then the oldest rejected answers) are replaced by a note to the model."
            " The estimate is one token per 3 bytes of text (cautious for JSON and prose), "
            "tightened when the provider reports more. Unset, a provider's overflow answer trims "
            "and resends at most twice; an investigation that still does not fit ends with "
            "`CONTEXT_WINDOW_EXCEEDED`."
        ),
    )
    llm_min_attempt_seconds: float = Field(
        0.1,
        gt=0,
        description="No model request starts with less time than this left in the budget.",
    )

    @field_validator("llm_base_url")
    @classmethod
    def _llm_url(cls, value: str | None) -> str | None:
        return check_url(value, ("http", "https"))

    @model_validator(mode="after")
    def _llm_consistent(self) -> Self:
        if self.llm_context_tokens is not None and self.llm_context_tokens <= (
            self.llm_max_tokens or 2048
        ):
            raise ValueError(
                "HAPI_LLM_CONTEXT_TOKENS must exceed HAPI_LLM_MAX_TOKENS"
                " (the answer's share of the context)"
            )
        if self.llm_provider != "builtin" and not self.llm_model:
            raise ValueError(f"HAPI_LLM_PROVIDER={self.llm_provider} needs HAPI_LLM_MODEL")
        if self.llm_provider == "anthropic" and (self.llm_temperature or 0) > 1:
            raise ValueError("HAPI_LLM_TEMPERATURE must be at most 1 for the anthropic provider")
        if self.llm_provider == "openai" and not self.llm_base_url:
            raise ValueError(
                "HAPI_LLM_PROVIDER=openai needs HAPI_LLM_BASE_URL (e.g. https://api.openai.com/v1)"
            )
        return self
