"""Service configuration: one `Settings` model read from `HAPI_*` environment
variables (pydantic-settings) and overridden by command-line flags.

Design notes: docs/internals.md (`config.py`).
"""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from hapi_grpc.adapters.llm.settings import LlmSettings
from hapi_grpc.adapters.settings import DependencySettings
from hapi_grpc.capture.settings import CaptureSettings
from hapi_grpc.domain.investigation.settings import EngineSettings
from hapi_grpc.domain.toolsets.settings import check_url
from hapi_grpc.security.settings import SecuritySettings
from hapi_grpc.toolsets.registry import TOOLSETS

__all__ = [
    "ConfigError",
    "ServerSettings",
    "ServiceSettings",
    "Settings",
    "env_name",
]

ENV_PREFIX = "HAPI_"


class ConfigError(ValueError):
    """The configuration is invalid; the one-line message names the setting's variable."""


def env_name(field: str) -> str:
    """The environment variable of a settings field (an alias is its own variable)."""
    info = Settings.model_fields.get(field)
    if info is not None and isinstance(info.validation_alias, str):
        return info.validation_alias
    return field if field.isupper() else ENV_PREFIX + field.upper()


class ServerSettings(BaseModel):
    """The gRPC server, its metrics endpoint, logs and traces, and the bounds of every
    investigation."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, validate_by_name=True)

    grpc_host: str = Field("[::]", description="Bind address of the gRPC server (`--host`).")
    grpc_port: int = Field(50051, ge=0, le=65535, description="gRPC port (`--port`).")
    max_concurrent_rpcs: int = Field(
        2000,
        ge=1,
        description=(
            "Concurrent `hapi.v1` calls before `RESOURCE_EXHAUSTED` (health is never capped). "
            "Sized by memory: an investigation waits on the model (3–5 ms of CPU each) and holds "
            "~63 kB; 1,000 at once peak at 147–149 MB RSS (85 MB idle), so 2,000 stay well under "
            "half of the 512 Mi container limit."
        ),
    )
    shutdown_grace_seconds: float = Field(
        30.0,
        ge=0,
        description="On SIGTERM, time in-flight calls get to finish (`--shutdown-grace`).",
    )
    shutdown_delay_seconds: float = Field(
        0.0,
        ge=0,
        description="On SIGTERM, time between health `NOT_SERVING` and refusing new calls.",
    )
    max_receive_message_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, description="Largest accepted request message."
    )
    keepalive_time_seconds: float = Field(60.0, gt=0, description="Server keepalive ping interval.")
    keepalive_timeout_seconds: float = Field(20.0, gt=0, description="Keepalive ping timeout.")
    max_connection_age_seconds: float = Field(
        0.0, ge=0, description="Age after which connections are recycled; 0 = never."
    )
    max_connection_age_grace_seconds: float = Field(
        330.0,
        ge=0,
        description="Grace after the age limit; keep it above the longest investigation.",
    )
    reflection: bool = Field(True, description="Serve gRPC server reflection (`--no-reflection`).")
    metrics_host: str = Field("0.0.0.0", description="Bind address of `/metrics`.")
    metrics_port: int = Field(
        9090,
        ge=-1,
        le=65535,
        description="Port of `/metrics`; 0 picks a free port, -1 disables (`--metrics-port`).",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="DEBUG, INFO, WARNING or ERROR (`--log-level`)."
    )
    log_format: Literal["json", "text"] = Field(
        "json",
        description=(
            "`json` (one object per line) or `text` for local development (`--log-format`)."
        ),
    )
    tracing_enabled: bool = Field(
        False, description="Export OpenTelemetry spans over OTLP (needs the `tracing` extra)."
    )
    otlp_endpoint: str | None = Field(
        None, validation_alias="OTEL_EXPORTER_OTLP_ENDPOINT", description="OTLP endpoint for spans."
    )

    max_tool_calls: int = Field(
        10,
        ge=1,
        le=100,
        description="Tool calls per investigation; further calls are refused with 'answer now'.",
    )
    max_llm_turns: int = Field(
        12,
        ge=1,
        le=100,
        description=(
            'Model turns per investigation. The last one sends `tool_choice: "none"` (Anthropic: '
            '`{"type": "none"}`) so the model must answer.'
        ),
    )
    max_format_repairs: int = Field(
        2,
        ge=0,
        le=10,
        description=(
            "Final answers that do not parse as the JSON contract are sent back this many times, "
            "then `LLM_OUTPUT_UNPARSEABLE`; they never spend the 3 parameter-validation attempts."
        ),
    )
    tool_timeout_seconds: float = Field(10.0, gt=0, description="Timeout of one tool call.")
    answer_margin_seconds: float = Field(
        1.0, ge=0, description="Time kept before the deadline to return the (partial) result."
    )
    default_budget_seconds: float = Field(
        300.0, gt=0, description="Investigation budget when the caller sets no deadline."
    )
    max_budget_seconds: float = Field(
        300.0,
        gt=0,
        description=(
            "The most any investigation gets, whatever deadline the caller sets (a longer "
            "deadline still returns the partial result at this bound)."
        ),
    )
    min_confidence: float = Field(
        0.7,
        ge=0,
        le=1,
        description="Selections below it get `needs_human_review` (LOW_CONFIDENCE).",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _otlp_url(cls, value: str | None) -> str | None:
        return check_url(value, ("http", "https"))


class ServiceSettings(
    ServerSettings, DependencySettings, LlmSettings, SecuritySettings, CaptureSettings
):
    """The service's own settings, every group of them; `Settings` adds the toolsets'."""

    def engine_settings(self) -> EngineSettings:
        """The investigation engine's bounds, from these settings."""
        return EngineSettings(
            max_tool_calls=self.max_tool_calls,
            max_llm_turns=self.max_llm_turns,
            tool_timeout=self.tool_timeout_seconds,
            answer_margin=self.answer_margin_seconds,
            default_budget=self.default_budget_seconds,
            max_budget=self.max_budget_seconds,
            min_confidence=self.min_confidence,
            max_format_repairs=self.max_format_repairs,
            context_tokens=self.llm_context_tokens,
            completion_tokens=self.llm_max_tokens or 2048,
        )

    def resolved_llm_api_key(self) -> str:
        """The API key from HAPI_LLM_API_KEY or the mounted file; "" when none."""
        if self.llm_api_key is not None:
            return self.llm_api_key.get_secret_value()
        if self.llm_api_key_file:
            _check_readable("llm_api_key_file", self.llm_api_key_file)
            try:
                return Path(self.llm_api_key_file).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(
                    f"{env_name('llm_api_key_file')}: cannot read {self.llm_api_key_file}: "
                    f"{getattr(exc, 'strerror', None) or 'not UTF-8 text'}"
                ) from None
        return ""


_TOOLSET_SETTINGS = tuple(t.settings_model for t in TOOLSETS if t.settings_model is not None)


class Settings(BaseSettings, ServiceSettings, *_TOOLSET_SETTINGS):  # type: ignore[misc]
    """All settings: the service's and every registered toolset's (`settings_model`).

    `Settings(...)` takes its values as given; `Settings.from_env` reads them
    from the environment (or a mapping standing in for it).
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        extra="forbid",
        validate_assignment=True,
        validate_by_name=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)  # the environment is read by `from_env` alone

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """Settings from the environment (or `env`), then `overrides` (flags; None = not given)."""
        values = _Environment(cls, os.environ if env is None else env)()
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            problems = "; ".join(_describe(err) for err in exc.errors(include_url=False))
            raise ConfigError(f"invalid configuration: {problems}") from None

    def check_files(self) -> None:
        """Raise ConfigError unless every file the settings will use can be read."""
        files = [
            "tls_cert_file",
            "tls_key_file",
            "tls_client_ca_file",
            "auth_tokens_file" if self.auth_mode == "static" else "",
            "catalog_file" if self.resolved_catalog_source == "embedded" else "",
        ]
        if self.llm_provider != "builtin" and self.llm_api_key is None:
            files.append("llm_api_key_file")
        if self.auth_mode == "tokenreview":
            files += ["tokenreview_ca_file", "tokenreview_token_file"]
        for toolset_class in TOOLSETS:
            toolset = toolset_class(toolset_class.settings_from(self))
            if toolset.enabled:
                files += toolset.readable_files()
        files += ["policy_file", "premises_file"]
        for field in filter(None, files):
            path = getattr(self, field)
            if path:
                _check_readable(field, path)


class _Environment(EnvSettingsSource):
    """The `HAPI_*` variables of `environ`, as pydantic-settings reads them; a list
    is comma-separated, a mapping a JSON object."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.env_vars = {name.lower(): value for name, value in environ.items() if value}

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        if typing.get_origin(field.annotation) is list:
            return [item.strip() for item in value.split(",") if item.strip()]
        try:
            return json.loads(value)
        except ValueError:
            return value  # validation says what it must be


# Messages of pydantic's errors that read better for a variable.
_MESSAGES = {
    "bool_parsing": "must be true or false",
    "dict_type": "must be a JSON object of strings",
}


def _describe(err: Any) -> str:
    """One problem as `HAPI_X: what is allowed (got 'value')`, on one line."""
    message = _MESSAGES.get(err["type"]) or str(err["msg"]).removeprefix("Value error, ")
    loc = err.get("loc") or ()
    if not loc:  # a rule across settings: its message names the variables
        return " ".join(message.split())
    field = str(loc[0])
    text = f"{env_name(field)}: {message}"
    value = err.get("input")
    # URLs, keys and headers may carry credentials: never shown.
    hidden = ("secret", "key", "headers", "_url", "endpoint")
    if isinstance(value, str | int | float) and not any(h in field.lower() for h in hidden):
        shown = str(value)
        if len(shown) <= 60:
            text += f" (got {shown!r})"
    return " ".join(text.split())


def _check_readable(field: str, path: str) -> None:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise ConfigError(
            f"{env_name(field)}: cannot read {path}: {exc.strerror or type(exc).__name__}"
        ) from None
