"""Settings of TLS, authentication, authorization and exposure (docs/operations.md)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hapi_grpc.domain.tenancy import Exposure
from hapi_grpc.domain.toolsets.settings import check_url

__all__ = ["SecuritySettings"]

_SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
_KUBERNETES_WORD = set("abcdefghijklmnopqrstuvwxyz0123456789-./")


class SecuritySettings(BaseModel):
    """Who may call, over what, and how much of what the tools read goes back to them."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    tls_cert_file: str | None = Field(
        None, description="Server certificate (PEM); enables TLS (`--tls-cert`)."
    )
    tls_key_file: str | None = Field(None, description="Server key (PEM) (`--tls-key`).")
    tls_client_ca_file: str | None = Field(
        None,
        description="CA bundle for client certificates; enables mutual TLS (`--tls-client-ca`).",
    )
    auth_mode: Literal["none", "static", "tokenreview"] = Field(
        "none",
        description=(
            "`none`, `static` (token file) or `tokenreview` (Kubernetes service-account tokens)."
        ),
    )
    auth_tokens_file: str | None = Field(
        None, description="Static bearer tokens, one per line (reloaded on change)."
    )
    tokenreview_api_url: str = Field(
        "https://kubernetes.default.svc",
        description=(
            "Kubernetes API server for TokenReview (`https://` only: the request carries a token)."
        ),
    )
    tokenreview_ca_file: str = Field(
        f"{_SERVICE_ACCOUNT}/ca.crt", description="CA of the Kubernetes API server."
    )
    tokenreview_token_file: str = Field(
        f"{_SERVICE_ACCOUNT}/token", description="Service-account token used to call TokenReview."
    )
    tokenreview_audiences: list[str] = Field(
        default_factory=list, description="Comma-separated audiences to require."
    )
    auth_allowed_callers: list[str] = Field(
        default_factory=list,
        description=(
            "`tokenreview` (required): comma-separated users allowed to call, e.g. "
            "`system:serviceaccount:remediation:remediation-controller`; others get "
            "`PERMISSION_DENIED`."
        ),
    )
    auth_static_namespaces: list[str] = Field(
        default_factory=list,
        description=(
            "`static` (required): namespaces (shell patterns, `*` for all) token holders may "
            "investigate."
        ),
    )
    auth_static_report_namespaces: list[str] = Field(
        default_factory=list,
        description=(
            "`static`: namespaces (shell patterns, `*` for all) where token holders may report"
            " outcomes; none by default."
        ),
    )
    authz_verb: str = Field(
        "get",
        description=(
            "Verb of that SubjectAccessReview (`tokenreview`): a caller may investigate a "
            "namespace where it is allowed this verb on `HAPI_AUTHZ_RESOURCE`."
        ),
    )
    authz_resource: str = Field(
        "pods",
        description=(
            "Resource of that SubjectAccessReview: `resource[/subresource][.group]`, e.g. "
            "`deployments.apps`."
        ),
    )
    # Reporting an outcome writes history that gates later decisions, so it needs
    # a permission of its own, by default one nobody holds until granted.
    authz_report_verb: str = Field(
        "create",
        description=(
            "Verb of the SubjectAccessReview that authorizes `ReportRemediationOutcome`"
            " (`tokenreview`) in the target's namespace; writing history is a permission of its"
            " own."
        ),
    )
    authz_report_resource: str = Field(
        "remediationoutcomes.hapi-grpc.io",
        description=(
            "Resource of that SubjectAccessReview (`resource[.group]`); the default names no real"
            " resource, so only an explicit grant allows it (deploy/auth-rbac.yaml)."
        ),
    )
    authz_cache_seconds: float = Field(
        10.0,
        ge=0,
        le=300,
        description="How long a SubjectAccessReview answer is reused (0: never).",
    )
    authz_timeout_seconds: float = Field(
        2.0,
        gt=0,
        le=30,
        description="Timeout of one SubjectAccessReview, within the caller's deadline.",
    )
    tool_output_exposure: Exposure = Field(
        "full",
        description=(
            "What tools read that goes back to callers: `full`, `summary` (tool results replaced "
            "by their size) or `none` (no tool-call records, no model text)."
        ),
    )

    @field_validator("authz_verb", "authz_resource", "authz_report_verb", "authz_report_resource")
    @classmethod
    def _kubernetes_word(cls, value: str) -> str:
        value = value.strip()
        if not value or not set(value) <= _KUBERNETES_WORD or value[0] in "./" or value[-1] in "./":
            raise ValueError(
                "must be a Kubernetes verb or resource[/subresource][.group] in lower case"
            )
        return value

    @field_validator("tokenreview_api_url")
    @classmethod
    def _tokenreview_url(cls, value: str) -> str | None:
        return check_url(value, ("https",))  # the request carries a token: TLS only

    @model_validator(mode="after")
    def _security_consistent(self) -> Self:
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("HAPI_TLS_CERT_FILE and HAPI_TLS_KEY_FILE must be set together")
        if self.tls_client_ca_file and not self.tls_cert_file:
            raise ValueError(
                "HAPI_TLS_CLIENT_CA_FILE (mutual TLS) needs HAPI_TLS_CERT_FILE and"
                " HAPI_TLS_KEY_FILE"
            )
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
        return self
