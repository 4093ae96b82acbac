"""Settings of what the service reads and keeps: the workflow catalog (embedded,
Data Storage or the cluster), the cache, kept results, remediation history, the policy file,
and the circuit breakers of outgoing dependencies."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hapi_grpc.domain.toolsets.settings import check_url

if TYPE_CHECKING:
    from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
    from hapi_grpc.adapters.datastorage.client import DataStorageClient

__all__ = ["DependencySettings"]

MIB = 1024 * 1024
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class DependencySettings(BaseModel):
    """The workflow catalog (embedded by default, Data Storage over HTTP, or the
    cluster's RemediationWorkflow and ActionType resources), the cache shared by
    replicas, kept results, remediation history, the operator's policy and the
    circuit breakers of outgoing dependencies."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    catalog_source: Literal["auto", "embedded", "datastorage", "kubernetes"] = Field(
        "auto",
        description=(
            "Where workflows come from: `embedded` (the catalog file), `datastorage` (Data "
            "Storage's search), `kubernetes` (RemediationWorkflow and ActionType resources, "
            "list + watch, with the Kubernetes toolset's credentials; docs/datastorage.md). "
            "`auto`: `datastorage` when `HAPI_DATA_STORAGE_URL` is set, else `embedded` "
            "(`--catalog-source`)."
        ),
    )
    catalog_file: str | None = Field(
        None,
        description=(
            "Embedded catalog file (YAML or JSON); default: the bundled catalog (`--catalog`)."
        ),
    )
    catalog_namespace: str = Field(
        "",
        description=(
            "`kubernetes` catalog: the namespace of the RemediationWorkflow and ActionType "
            "resources; empty reads every namespace (and needs a ClusterRole)."
        ),
    )
    data_storage_url: str | None = Field(
        None,
        description=(
            "Data Storage over HTTP: the catalog (with `HAPI_CATALOG_SOURCE` `auto` or "
            "`datastorage`) and the remediation history (`--data-storage-url`)."
        ),
    )
    data_storage_timeout_seconds: float = Field(
        2.0, gt=0, description="Per-request timeout (always clipped to the caller's deadline)."
    )
    data_storage_max_retries: int = Field(
        3,
        ge=0,
        le=10,
        description=(
            "Retries on timeouts, connection errors, 5xx and 429 (Retry-After honoured up to 30 "
            "s, within the budget)."
        ),
    )
    data_storage_max_connections: int = Field(
        100,
        ge=1,
        le=10_000,
        description=(
            "Connection pool to Data Storage; waiting for a connection counts against the request"
            " timeout. A lookup takes milliseconds, so 100 serve thousands a second."
        ),
    )
    cache_url: str | None = Field(
        None,
        description=(
            "`redis://host:port/db` (or `rediss://`) shares the catalog cache between replicas; "
            "default in-memory (`memory://`)."
        ),
    )
    cache_ttl_seconds: float = Field(
        3600.0, gt=0, description="TTL of cached searches and schemas."
    )
    cache_max_bytes: int = Field(
        16 * MIB,
        ge=MIB,
        le=64 * 1024 * MIB,
        description=(
            "Bytes of Data Storage answers cached in this process (without Redis); the least "
            "recently used go first. At least 1 MiB."
        ),
    )
    result_ttl_seconds: float = Field(
        900.0,
        ge=0,
        description=(
            "How long a finished analysis is returned again to retries (same `remediation_id` and"
            " incident); 0 keeps none."
        ),
    )
    result_max_bytes: int = Field(
        64 * MIB,
        ge=MIB,
        le=64 * 1024 * MIB,
        description=(
            "Bytes of finished analyses kept in this process without `HAPI_CACHE_URL` (their "
            "compressed messages and what keeping them costs); the oldest go first. At least 1 "
            "MiB."
        ),
    )
    policy_file: str | None = Field(
        None,
        description=(
            "Operator policy ([docs/policy.md](policy.md)): YAML of named CEL rules over each "
            "decision that require review, forbid workflows, or rate-limit automated decisions "
            "per target (counted in `HAPI_CACHE_URL`, shared by every replica through Redis). "
            "Checked at start (exit status 2, one line naming the rule); reloaded when the file "
            "changes, a broken change keeps the last good policy. Example: "
            "`deploy/optional/policy.example.yaml`."
        ),
    )
    policy_check_seconds: float = Field(
        2.0,
        gt=0,
        le=300,
        description="How often, at most, the policy file is looked at for changes.",
    )
    premises_file: str | None = Field(
        None,
        description=(
            "Operator premises ([docs/premises.md](premises.md)): YAML of premise packs per "
            "action type (added to, extending or replacing the shipped ones) and per workflow "
            "(a type to judge it as, parameter-role mappings, conditions of its own), in CEL. "
            "Checked at start (exit status 2, one line naming the entry); "
            "`hapi-grpc premises check` checks a file first."
        ),
    )
    history_ttl_seconds: float = Field(
        90 * 86_400.0,
        gt=0,
        description=(
            "How long remediation history (decisions returned, outcomes reported) is kept; "
            "default 90 days, the history's summary window (docs/outcomes.md)."
        ),
    )
    history_max_per_target: int = Field(
        100,
        ge=1,
        le=10_000,
        description=(
            "Outcomes kept per target resource, per reporting caller and per kind (failures apart"
            " from successes and declines); the earliest recorded go first."
        ),
    )
    history_max_entries: int = Field(
        100_000,
        ge=1,
        le=10_000_000,
        description=(
            "Outcomes kept in all, and decisions in all; over it, the tenant (namespace and "
            "caller) holding the most bytes loses its earliest recorded outcome, failures last; "
            "the oldest decision goes first."
        ),
    )
    history_max_bytes: int = Field(
        32 * MIB,
        ge=MIB,
        le=64 * 1024 * MIB,
        description=(
            "Bytes of outcomes kept in all (their JSON and what keeping it costs), evicted as "
            "above; at least 1 MiB."
        ),
    )
    history_max_decision_bytes: int = Field(
        8 * MIB,
        ge=MIB,
        le=64 * 1024 * MIB,
        description="Bytes of decisions kept in all, the oldest going first; at least 1 MiB.",
    )
    history_data_storage: bool = Field(
        True,
        description=(
            "With `HAPI_DATA_STORAGE_URL` set, read history from Data Storage's "
            "`/api/v1/remediation-history/context`; outcomes are still recorded here."
        ),
    )
    history_cache_seconds: float = Field(
        5.0,
        ge=0,
        le=60,
        description=(
            "How long a Data Storage history answer is reused (seconds, at most 60; 0: never)."
        ),
    )
    breaker_failure_ratio: float = Field(
        0.5, gt=0, le=1, description="Circuit breaker opens at this failure share ..."
    )
    breaker_window_seconds: float = Field(
        300.0, gt=0, description="... over this sliding window ..."
    )
    breaker_min_calls: int = Field(
        10, ge=1, description="... once at least this many calls were made in it."
    )
    breaker_recovery_seconds: float = Field(
        30.0, gt=0, description="Open time before a half-open probe is let through."
    )

    @field_validator("data_storage_url")
    @classmethod
    def _data_storage_url(cls, value: str | None) -> str | None:
        return check_url(value, ("http", "https"))

    @field_validator("cache_url")
    @classmethod
    def _cache_url(cls, value: str | None) -> str | None:
        return check_url(value, ("memory", "redis", "rediss"))  # memory: in this process

    @field_validator("catalog_namespace")
    @classmethod
    def _catalog_namespace(cls, value: str) -> str:
        value = value.strip()
        if value and not _DNS_LABEL.fullmatch(value):
            raise ValueError("must be a namespace name (a DNS label), or empty for all")
        return value

    @model_validator(mode="after")
    def _catalog_consistent(self) -> Self:
        if self.catalog_source == "datastorage" and not self.data_storage_url:
            raise ValueError("HAPI_CATALOG_SOURCE=datastorage needs HAPI_DATA_STORAGE_URL")
        if self.catalog_namespace and self.resolved_catalog_source != "kubernetes":
            raise ValueError("HAPI_CATALOG_NAMESPACE applies to HAPI_CATALOG_SOURCE=kubernetes")
        return self

    @property
    def resolved_catalog_source(self) -> Literal["embedded", "datastorage", "kubernetes"]:
        """`auto`: Data Storage when HAPI_DATA_STORAGE_URL is set, else embedded."""
        if self.catalog_source == "auto":
            return "datastorage" if self.data_storage_url else "embedded"
        return self.catalog_source

    def breaker(self, dependency: str) -> RateCircuitBreaker:
        """A circuit breaker for the outgoing `dependency`, from the HAPI_BREAKER_* settings."""
        from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker

        return RateCircuitBreaker(
            dependency,
            failure_ratio=self.breaker_failure_ratio,
            window_seconds=self.breaker_window_seconds,
            min_calls=self.breaker_min_calls,
            recovery_timeout=self.breaker_recovery_seconds,
        )

    def data_storage_client(self, breaker: str) -> DataStorageClient:
        """A client of HAPI_DATA_STORAGE_URL guarded by the circuit breaker `breaker`."""
        from hapi_grpc.adapters.datastorage.client import DataStorageClient

        assert self.data_storage_url is not None  # checked by the callers
        return DataStorageClient(
            self.data_storage_url,
            request_timeout=self.data_storage_timeout_seconds,
            max_retries=self.data_storage_max_retries,
            max_connections=self.data_storage_max_connections,
            breaker=self.breaker(breaker),
        )
