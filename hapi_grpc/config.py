"""Service configuration: one `Settings` model, read from `HAPI_*` environment
variables and overridden by command-line flags.

Every knob is described in config_descriptions (rendered to docs/configuration.md).
Secrets are held as `SecretStr` so they never print in reprs or logs. Every mistake raises
`ConfigError` with one line that names the environment variable and what it
allows (URL schemes and hosts, number ranges, enum values, readable files).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from hapi_grpc.domain.toolsets.settings import check_url
from hapi_grpc.toolsets.registry import TOOLSETS

ENV_PREFIX = "HAPI_"
MIB = 1024 * 1024

# Settings read from a non-HAPI_ variable, by field name.
_OTHER_ENV = {"otlp_endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT"}


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class ConfigError(ValueError):
    """The configuration is invalid; the one-line message names the setting's variable."""


def env_name(field: str) -> str:
    """The environment variable of a settings field."""
    return _OTHER_ENV.get(field, ENV_PREFIX + field.upper())


# URL settings and the schemes each accepts. A host is required for every
# scheme but memory:// (the in-process cache).
_URL_SCHEMES: dict[str, tuple[str, ...]] = {
    "data_storage_url": ("http", "https"),
    "llm_base_url": ("http", "https"),
    "cache_url": ("memory", "redis", "rediss"),
    "otlp_endpoint": ("http", "https"),
    # TokenReview is sent with the service-account token: TLS only.
    "tokenreview_api_url": ("https",),
}


class ServiceSettings(BaseModel):
    """The service's own settings with their defaults. Env var = HAPI_ + FIELD NAME
    upper-cased. `Settings` adds each registered toolset's settings."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # gRPC server
    grpc_host: str = "[::]"
    grpc_port: int = Field(50051, ge=0, le=65535)
    # Investigations wait on the model, not the CPU (3-5 ms of CPU each), so the
    # cap is sized by memory. Measured with bench/bench_concurrent_investigations.py
    # (hapi-grpc serve, scripted model, 2 s per turn): 85 MB RSS idle, 147-149 MB at
    # 1,000 concurrent investigations, ~63 kB each. 2,000 comes to ~210 MB,
    # under half of the 512 Mi container limit (deploy/deployment.yaml).
    max_concurrent_rpcs: int = Field(2000, ge=1)
    shutdown_grace_seconds: float = Field(30.0, ge=0)
    # Time between health turning NOT_SERVING and new calls being refused, so
    # load balancers and probes notice before connections are closed.
    shutdown_delay_seconds: float = Field(0.0, ge=0)
    max_receive_message_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    keepalive_time_seconds: float = Field(60.0, gt=0)
    keepalive_timeout_seconds: float = Field(20.0, gt=0)
    # 0 = connections are never aged out. When set, the grace that follows must
    # outlast the longest investigation or calls are cut mid-flight.
    max_connection_age_seconds: float = Field(0.0, ge=0)
    max_connection_age_grace_seconds: float = Field(330.0, ge=0)
    reflection: bool = True

    # Metrics (/metrics); 0 picks a free port, -1 disables the endpoint.
    metrics_host: str = "0.0.0.0"
    metrics_port: int = Field(9090, ge=-1, le=65535)

    # Logging and tracing
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "text"] = "json"
    tracing_enabled: bool = False
    otlp_endpoint: str | None = None

    # Workflow catalog: embedded (default), Data Storage over HTTP, or the
    # cluster's RemediationWorkflow and ActionType resources
    catalog_source: Literal["auto", "embedded", "datastorage", "kubernetes"] = "auto"
    catalog_file: str | None = None
    catalog_namespace: str = ""
    data_storage_url: str | None = None
    data_storage_timeout_seconds: float = Field(2.0, gt=0)
    data_storage_max_retries: int = Field(3, ge=0, le=10)
    # Connection pool of the Data Storage client; waiting for a connection
    # counts against the request timeout.
    data_storage_max_connections: int = Field(100, ge=1, le=10_000)
    cache_url: str | None = None
    cache_ttl_seconds: float = Field(3600.0, gt=0)
    cache_max_bytes: int = Field(16 * MIB, ge=MIB, le=64 * 1024 * MIB)
    # How long a finished analysis is returned again for the same remediation
    # id and incident (in the cache_url backend); 0 keeps none.
    result_ttl_seconds: float = Field(900.0, ge=0)
    # Bytes of finished analyses kept in this process (without Redis).
    result_max_bytes: int = Field(64 * MIB, ge=MIB, le=64 * 1024 * MIB)
    # Operator policy (docs/policy.md): CEL rules over every decision, checked at
    # start and reloaded when the file changes (looked at once per interval);
    # rate limits are counted in the cache_url backend, shared through Redis.
    policy_file: str | None = None
    policy_check_seconds: float = Field(2.0, gt=0, le=300)
    # Operator premises (docs/premises.md): packs per action type and per workflow
    # added to or replacing the shipped ones, and parameter-role mappings; CEL,
    # checked at start.
    premises_file: str | None = None
    # Remediation history (docs/outcomes.md): decisions returned and outcomes
    # reported, kept in the cache_url backend (Redis: shared by replicas).
    history_ttl_seconds: float = Field(90 * 86_400.0, gt=0)
    history_max_per_target: int = Field(100, ge=1, le=10_000)
    history_max_entries: int = Field(100_000, ge=1, le=10_000_000)
    history_max_bytes: int = Field(32 * MIB, ge=MIB, le=64 * 1024 * MIB)
    history_max_decision_bytes: int = Field(8 * MIB, ge=MIB, le=64 * 1024 * MIB)
    history_data_storage: bool = True
    history_cache_seconds: float = Field(5.0, ge=0, le=60)
    breaker_failure_ratio: float = Field(0.5, gt=0, le=1)
    breaker_window_seconds: float = Field(300.0, gt=0)
    breaker_min_calls: int = Field(10, ge=1)
    breaker_recovery_seconds: float = Field(30.0, gt=0)

    # Language model
    llm_provider: Literal["builtin", "openai", "anthropic"] = "builtin"
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_api_key_file: str | None = None
    llm_auth_style: Literal["bearer", "api-key"] = "bearer"
    llm_extra_headers: dict[str, str] = Field(default_factory=dict)
    llm_extra_query: dict[str, str] = Field(default_factory=dict)
    llm_timeout_seconds: float = Field(120.0, gt=0)
    llm_max_retries: int = Field(2, ge=0, le=10)
    # Model requests in flight at most (and the size of the connection pool).
    # Set it to what the provider's rate limit allows; calls beyond it wait for
    # a slot inside their deadline, then get RESOURCE_EXHAUSTED with RetryInfo.
    llm_max_concurrent_requests: int = Field(1000, ge=1, le=100_000)
    llm_temperature: float | None = Field(0.0, ge=0, le=2)
    llm_max_tokens: int | None = Field(2048, ge=1)
    # The model's context window in tokens (prompt and answer). Unset: unknown;
    # nothing is trimmed ahead and a provider's overflow error ends the
    # investigation with CONTEXT_WINDOW_EXCEEDED.
    llm_context_tokens: int | None = Field(None, ge=1024)
    # No model request starts with less time than this left in the budget
    # (about the time the model needs for a short answer).
    llm_min_attempt_seconds: float = Field(0.1, gt=0)

    # Investigation bounds
    max_tool_calls: int = Field(10, ge=1, le=100)
    max_llm_turns: int = Field(12, ge=1, le=100)
    # Unparseable final answers sent back for repair (not validation attempts).
    max_format_repairs: int = Field(2, ge=0, le=10)
    tool_timeout_seconds: float = Field(10.0, gt=0)
    answer_margin_seconds: float = Field(1.0, ge=0)
    default_budget_seconds: float = Field(300.0, gt=0)
    # The most any investigation gets, whatever deadline the caller sets (the
    # shutdown grace and terminationGracePeriodSeconds are sized from it).
    max_budget_seconds: float = Field(300.0, gt=0)
    min_confidence: float = Field(0.7, ge=0, le=1)

    # Security
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_client_ca_file: str | None = None
    auth_mode: Literal["none", "static", "tokenreview"] = "none"
    auth_tokens_file: str | None = None
    tokenreview_api_url: str = "https://kubernetes.default.svc"
    tokenreview_ca_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    tokenreview_token_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    tokenreview_audiences: list[str] = Field(default_factory=list)
    # tokenreview: the Kubernetes users allowed to call, e.g.
    # system:serviceaccount:<namespace>:<name>; anyone else PERMISSION_DENIED.
    auth_allowed_callers: list[str] = Field(default_factory=list)
    # static: namespaces (shell patterns, * for all) token holders may investigate.
    auth_static_namespaces: list[str] = Field(default_factory=list)
    # static: namespaces where token holders may report outcomes; none by default.
    auth_static_report_namespaces: list[str] = Field(default_factory=list)
    # tokenreview: a caller may investigate a namespace where a SubjectAccessReview
    # allows it this verb on this resource (resource[/subresource][.group]).
    authz_verb: str = "get"
    authz_resource: str = "pods"
    # tokenreview: reporting an outcome writes history that gates later decisions,
    # so it needs its own permission, by default one nobody holds until granted
    # (deploy/auth-rbac.yaml: the hapi-grpc-outcome-reporter role).
    authz_report_verb: str = "create"
    authz_report_resource: str = "remediationoutcomes.hapi-grpc.io"
    authz_cache_seconds: float = Field(10.0, ge=0, le=300)
    authz_timeout_seconds: float = Field(2.0, gt=0, le=30)
    # How much of what the tools read goes back to callers: full, summary (no
    # raw tool output) or none (no tool calls, no model text).
    tool_output_exposure: Literal["full", "summary", "none"] = "full"

    @field_validator("authz_verb", "authz_resource", "authz_report_verb", "authz_report_resource")
    @classmethod
    def _authz_word(cls, value: str) -> str:
        value = value.strip()
        allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-./")
        if not value or not set(value) <= allowed or value[0] in "./" or value[-1] in "./":
            raise ValueError(
                "must be a Kubernetes verb or resource[/subresource][.group] in lower case"
            )
        return value

    @field_validator("catalog_namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        value = value.strip()
        if value and not _DNS_LABEL.fullmatch(value):
            raise ValueError("must be a namespace name (a DNS label), or empty for all")
        return value

    @property
    def resolved_catalog_source(self) -> Literal["embedded", "datastorage", "kubernetes"]:
        """`auto`: Data Storage when HAPI_DATA_STORAGE_URL is set, else embedded."""
        if self.catalog_source == "auto":
            return "datastorage" if self.data_storage_url else "embedded"
        return self.catalog_source

    @field_validator(*_URL_SCHEMES, mode="after")
    @classmethod
    def _url(cls, value: str | None, info: Any) -> str | None:
        return check_url(value, _URL_SCHEMES[info.field_name])

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        def both(*fields: str) -> str:
            return " and ".join(env_name(f) for f in fields)

        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError(f"{both('tls_cert_file', 'tls_key_file')} must be set together")
        if self.tls_client_ca_file and not self.tls_cert_file:
            raise ValueError(
                f"HAPI_TLS_CLIENT_CA_FILE (mutual TLS) needs "
                f"{both('tls_cert_file', 'tls_key_file')}"
            )
        if self.catalog_source == "datastorage" and not self.data_storage_url:
            raise ValueError("HAPI_CATALOG_SOURCE=datastorage needs HAPI_DATA_STORAGE_URL")
        if self.catalog_namespace and self.resolved_catalog_source != "kubernetes":
            raise ValueError("HAPI_CATALOG_NAMESPACE applies to HAPI_CATALOG_SOURCE=kubernetes")
        if self.auth_mode == "static" and not self.auth_tokens_file:
            raise ValueError("HAPI_AUTH_MODE=static needs HAPI_AUTH_TOKENS_FILE")
        if self.auth_mode == "static" and not self.auth_static_namespaces:
            raise ValueError(
                "HAPI_AUTH_MODE=static needs HAPI_AUTH_STATIC_NAMESPACES (the namespaces"
                " token holders may investigate; * for all)"
            )
        if self.auth_mode == "tokenreview" and not self.auth_allowed_callers:
            raise ValueError(
                "HAPI_AUTH_MODE=tokenreview needs HAPI_AUTH_ALLOWED_CALLERS (who may call,"
                " e.g. system:serviceaccount:<namespace>:<name>)"
            )
        if self.llm_context_tokens is not None and self.llm_context_tokens <= (
            self.llm_max_tokens or 2048
        ):
            raise ValueError(
                f"{env_name('llm_context_tokens')} must exceed {env_name('llm_max_tokens')}"
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

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """Settings from the environment, then `overrides` (flags; None = not given)."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name, info in cls.model_fields.items():
            key = env_name(name)
            raw = env.get(key)
            if raw is None or raw == "":
                continue
            values[name] = _parse_env(name, key, raw, info.annotation)
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            problems = "; ".join(_describe(err) for err in exc.errors(include_url=False))
            raise ConfigError(f"invalid configuration: {problems}") from None


_TOOLSET_SETTINGS = tuple(t.settings_model for t in TOOLSETS if t.settings_model is not None)


class Settings(ServiceSettings, *_TOOLSET_SETTINGS):  # type: ignore[misc]
    """All settings: the service's and every registered toolset's (`settings_model`),
    one flat model so each keeps its `HAPI_*` variable."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _describe(err: Any) -> str:
    """One problem as `HAPI_X: what is allowed (got 'value')`, on one line."""
    message = str(err["msg"]).removeprefix("Value error, ")
    loc = err.get("loc") or ()
    if not loc:  # a rule across settings: its message names the variables
        return " ".join(message.split())
    field = str(loc[0])
    text = f"{env_name(field)}: {message}"
    value = err.get("input")
    if (
        isinstance(value, str | int | float)
        and "secret" not in field
        and "key" not in field
        and "headers" not in field  # may carry credentials
    ):
        shown = str(value)
        if field not in _URL_SCHEMES and not field.endswith("_url") and len(shown) <= 60:
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


def _parse_env(name: str, key: str, raw: str, annotation: Any) -> Any:
    text = str(annotation)
    if "dict" in text:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            raise ConfigError(f"{key}: must be a JSON object") from None
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: must be a JSON object of strings")
        return value
    if "list" in text:
        return [item.strip() for item in raw.split(",") if item.strip()]
    if annotation is bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(f"{key}: must be true or false, got {raw!r}")
    return raw
