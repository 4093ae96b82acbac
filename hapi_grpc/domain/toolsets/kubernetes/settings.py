"""Settings of the `kubernetes` toolset (`HAPI_KUBERNETES*`).

Credentials come from the pod's service account, else the standard KUBECONFIG
variable or ~/.kube/config. `auto`: on when credentials are found; `on`:
startup fails without them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

__all__ = ["KubernetesToolsetSettings"]


class KubernetesToolsetSettings(BaseModel):
    """Read-only Kubernetes investigation tools. The client also reads the standard
    `KUBECONFIG` variable: the kubeconfig path list (current context) when not
    running in a pod; else `~/.kube/config`."""

    kubernetes: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "`auto` (on when credentials are found), `on` (startup fails without usable "
            "credentials), `off`. Credentials: the in-cluster service account, else "
            "`KUBECONFIG` (current context) or `~/.kube/config`; see "
            "[toolsets.md](toolsets.md#kubernetes-investigation-tools)."
        ),
    )
    kubernetes_namespaces_allow: list[str] = Field(
        default_factory=list,
        description=(
            "Comma-separated namespaces (shell patterns, e.g. `prod-*`) the tools may read; "
            "empty: all."
        ),
    )
    kubernetes_namespaces_deny: list[str] = Field(
        default_factory=list, description="Namespaces never read (wins over the allow list)."
    )
    kubernetes_kinds: list[str] = Field(
        default_factory=list,
        description=(
            "Kind allow-list (e.g. `Pod,Deployment,Node,Event`); empty: every kind the cluster "
            "serves except Secrets."
        ),
    )
    kubernetes_max_calls: int = Field(
        20,
        ge=0,
        le=200,
        description=(
            "Kubernetes tool calls per investigation (the catalog keeps its own cap of 10)."
        ),
    )
    kubernetes_call_timeout: float = Field(
        5.0,
        gt=0,
        le=300,
        description="Seconds per call, always within the investigation's budget.",
    )

    @field_validator("kubernetes", mode="before")
    @classmethod
    def _kubernetes_mode(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value
