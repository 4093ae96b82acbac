"""Argument models of the `kubernetes` tools (each mirrors a message in tools.proto).

The models produce the JSON Schema the model is shown and validate what it
sends; a test keeps them in step with `hapi.v1.Kubernetes*Args`.
"""

from __future__ import annotations

from typing import Any

import re2
from pydantic import Field, field_validator

from hapi_grpc.domain.toolsets.tool import ToolArgs

__all__ = [
    "KubernetesEventsArgs",
    "KubernetesGetArgs",
    "KubernetesListArgs",
    "KubernetesOwnerChainArgs",
    "KubernetesPodLogsArgs",
]

_NAME = r"^[A-Za-z0-9]([-A-Za-z0-9_.:]{0,251}[A-Za-z0-9])?$"
_NAMESPACE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
_KIND = r"^[A-Za-z0-9][-A-Za-z0-9_./]{0,127}$"
_SELECTOR = r"^[-A-Za-z0-9_./=!,() ]{0,512}$"


def _blank_is_unset(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        return None
    return value.strip() if isinstance(value, str) else value


class _Base(ToolArgs):
    @field_validator("*", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return _blank_is_unset(value)


class KubernetesGetArgs(_Base):
    """Arguments of `kubernetes_get` (proto `KubernetesGetArgs`)."""

    kind: str = Field(pattern=_KIND, description="Kind, e.g. Pod, Deployment, Node, Certificate")
    name: str = Field(pattern=_NAME, description="Object name")
    namespace: str | None = Field(
        default=None, pattern=_NAMESPACE, description="Namespace (omit for cluster-scoped kinds)"
    )


class KubernetesListArgs(_Base):
    """Arguments of `kubernetes_list` (proto `KubernetesListArgs`)."""

    kind: str = Field(pattern=_KIND, description="Kind, e.g. Pod, Deployment, Node")
    namespace: str | None = Field(
        default=None, pattern=_NAMESPACE, description="Namespace (required for namespaced kinds)"
    )
    label_selector: str | None = Field(
        default=None, pattern=_SELECTOR, description="e.g. app=payment-api"
    )
    field_selector: str | None = Field(
        default=None, pattern=_SELECTOR, description="e.g. spec.nodeName=worker-3"
    )
    limit: int = Field(default=30, ge=1, le=100, description="Maximum objects")


class KubernetesEventsArgs(_Base):
    """Arguments of `kubernetes_events` (proto `KubernetesEventsArgs`)."""

    namespace: str | None = Field(
        default=None, pattern=_NAMESPACE, description="Namespace (omit for a Node's events)"
    )
    kind: str | None = Field(default=None, pattern=_KIND, description="Kind of the object")
    name: str | None = Field(
        default=None, pattern=_NAME, description="Object name; omit for the whole namespace"
    )
    limit: int = Field(default=20, ge=1, le=50, description="Maximum folded events")


class KubernetesPodLogsArgs(_Base):
    """Arguments of `kubernetes_pod_logs` (proto `KubernetesPodLogsArgs`)."""

    namespace: str = Field(pattern=_NAMESPACE, description="Pod namespace")
    pod: str = Field(pattern=_NAME, description="Pod name")
    container: str | None = Field(
        default=None, pattern=_NAME, description="Container (omit when the pod has one)"
    )
    previous: bool = Field(
        default=False, description="Log of the previous (crashed) container instance"
    )
    tail_lines: int = Field(default=100, ge=1, le=500, description="Last N lines")
    filter: str | None = Field(
        default=None, max_length=256, description="RE2 pattern; only matching lines are shown"
    )
    since_seconds: int | None = Field(
        default=None, ge=1, le=604_800, description="Only lines from the last N seconds"
    )

    @field_validator("filter")
    @classmethod
    def _re2_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re2.compile(value)
            except re2.error as exc:
                raise ValueError(f"not an RE2 pattern: {exc}") from None
        return value


class KubernetesOwnerChainArgs(_Base):
    """Arguments of `kubernetes_owner_chain` (proto `KubernetesOwnerChainArgs`)."""

    namespace: str | None = Field(
        default=None, pattern=_NAMESPACE, description="Namespace (omit for cluster-scoped kinds)"
    )
    kind: str = Field(default="Pod", pattern=_KIND, description="Kind of the starting object")
    name: str = Field(pattern=_NAME, description="Name of the starting object")
