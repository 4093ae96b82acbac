"""Argument models of our tools: generated from protos/hapi/v1/tools.proto, do not edit.

Regenerate with `make generate` (scripts/gen_tool_args.py). Pure pydantic: the
domain imports no protobuf. A toolset adds what a proto cannot say (a check
such as "compiles as RE2") in a thin subclass in its own package.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from hapi_grpc.domain.toolsets.tool import ToolArgs

__all__ = [
    "AlertmanagerActiveAlertsArgs",
    "KubernetesEventsArgs",
    "KubernetesGetArgs",
    "KubernetesListArgs",
    "KubernetesNodeStatsArgs",
    "KubernetesOwnerChainArgs",
    "KubernetesPodLogsArgs",
    "PrometheusLabelValuesArgs",
    "PrometheusQueryArgs",
    "PrometheusRangeQueryArgs",
    "PrometheusSeriesArgs",
    "ProtoArgs",
    "SearchWorkflowCatalogArgs",
    "ValidateWorkflowParametersArgs",
]


class ProtoArgs(ToolArgs):
    """Base of the generated models: a blank optional string is an unset field."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _drop_blank(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls._BLANK_IS_UNSET:
            blank = [
                k
                for k in cls._BLANK_IS_UNSET
                if isinstance(data.get(k), str) and not data[k].strip()
            ]
            if blank:
                data = {k: v for k, v in data.items() if k not in blank}
        return data


def _values_only(schema: dict[str, Any]) -> None:
    """Shows a map's value rule only: its key pattern is still checked, but
    `patternProperties` is not accepted by every model provider."""
    rules = schema.pop("patternProperties", None)
    if rules:
        schema["additionalProperties"] = next(iter(rules.values()))


# String rules several fields share.
_Kind = Annotated[str, Field(max_length=128, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_./]{0,127}$")]
_Name = Annotated[
    str, Field(max_length=253, pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.:]{0,251}[A-Za-z0-9])?$")
]
_Namespace = Annotated[str, Field(max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]
_LabelSelector = Annotated[str, Field(max_length=512, pattern=r"^[-A-Za-z0-9_./=!,() ]{0,512}$")]


class SearchWorkflowCatalogArgs(ProtoArgs):
    """Arguments of `search_workflow_catalog` (proto `SearchWorkflowCatalogArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"signal_type", "severity", "component"})

    query: str = Field(
        min_length=1,
        max_length=512,
        description=(
            'Natural-language query, by convention "<signal_type> <severity> '
            '[keywords]", e.g. "OOMKilled critical memory limit".'
        ),
    )
    similarity_threshold: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="Minimum match score (0.0-1.0) of returned workflows. Default 0.70.",
    )
    limit: int = Field(
        default=5,
        ge=1,
        le=10,
        description="Maximum number of workflows to return. Default 5, at most 10.",
    )
    signal_type: str | None = Field(
        default=None,
        max_length=128,
        description="Signal type your investigation identified (may differ from the input signal).",
    )
    severity: Literal["critical", "high", "medium", "low"] | None = Field(
        default=None, description="Severity you assessed: critical, high, medium or low."
    )
    component: str | None = Field(
        default=None,
        max_length=128,
        description='Resource type category that needs remediation, e.g. "deployment", "node".',
    )


class ValidateWorkflowParametersArgs(ProtoArgs):
    """Arguments of `validate_workflow_parameters` (proto `ValidateWorkflowParametersArgs`)."""

    workflow_id: str = Field(
        min_length=1,
        max_length=128,
        description="Workflow id exactly as returned by search_workflow_catalog.",
    )
    parameters: dict[str, Any] = Field(
        description="Parameters you intend to use, name to value, with the schema's types."
    )


class KubernetesGetArgs(ProtoArgs):
    """Arguments of `kubernetes_get` (proto `KubernetesGetArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"namespace"})

    kind: _Kind = Field(
        min_length=1,
        description=(
            "Kind as the cluster serves it (Pod, Deployment, Node, Certificate, "
            "or group/version/Kind)."
        ),
    )
    name: _Name = Field(min_length=1, description="Object name.")
    namespace: _Namespace | None = Field(
        default=None, description="Namespace; empty for cluster-scoped kinds."
    )


class KubernetesListArgs(ProtoArgs):
    """Arguments of `kubernetes_list` (proto `KubernetesListArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset(
        {"namespace", "label_selector", "field_selector"}
    )

    kind: _Kind = Field(min_length=1, description="Kind to list.")
    namespace: _Namespace | None = Field(
        default=None, description="Namespace; required for namespaced kinds."
    )
    label_selector: _LabelSelector | None = Field(
        default=None, description='Label selector, e.g. "app=payment-api".'
    )
    field_selector: _LabelSelector | None = Field(
        default=None, description='Field selector, e.g. "spec.nodeName=worker-3".'
    )
    limit: int = Field(default=30, ge=1, le=100, description="Maximum objects, 1-100. Default 30.")


class KubernetesEventsArgs(ProtoArgs):
    """Arguments of `kubernetes_events` (proto `KubernetesEventsArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"namespace", "kind", "name"})

    namespace: _Namespace | None = Field(
        default=None, description="Namespace; empty for a cluster-scoped object such as a Node."
    )
    kind: _Kind | None = Field(default=None, description="Kind of the object the events are about.")
    name: _Name | None = Field(
        default=None, description="Name of the object; empty for the whole namespace."
    )
    limit: int = Field(
        default=20, ge=1, le=50, description="Maximum folded events, 1-50. Default 20."
    )


class KubernetesPodLogsArgs(ProtoArgs):
    """Arguments of `kubernetes_pod_logs` (proto `KubernetesPodLogsArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"container", "filter"})

    namespace: _Namespace = Field(min_length=1, description="Pod namespace.")
    pod: _Name = Field(min_length=1, description="Pod name.")
    container: _Name | None = Field(
        default=None, description="Container; empty when the pod has one."
    )
    previous: bool = Field(default=False, description="The previous (crashed) container instance.")
    tail_lines: int = Field(
        default=100, ge=1, le=500, description="Last N lines, 1-500. Default 100."
    )
    filter: str | None = Field(
        default=None, max_length=256, description="RE2 pattern: only matching lines are shown."
    )
    since_seconds: int | None = Field(
        default=None, ge=1, le=604800, description="Only lines from the last N seconds."
    )


class KubernetesOwnerChainArgs(ProtoArgs):
    """Arguments of `kubernetes_owner_chain` (proto `KubernetesOwnerChainArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"namespace", "kind"})

    namespace: _Namespace | None = Field(
        default=None, description="Namespace; empty for cluster-scoped kinds."
    )
    kind: _Kind = Field(default="Pod", description="Kind of the starting object. Default Pod.")
    name: _Name = Field(min_length=1, description="Name of the starting object.")


class PrometheusQueryArgs(ProtoArgs):
    """Arguments of `prometheus_query` (proto `PrometheusQueryArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"time"})

    query: str = Field(min_length=1, max_length=4000, description="PromQL expression.")
    time: str | None = Field(
        default=None,
        max_length=64,
        description=(
            "Evaluation time: now, now-30m, unix seconds or an RFC 3339 time "
            "(2026-01-01T10:00:00Z); empty means now."
        ),
    )


class PrometheusRangeQueryArgs(ProtoArgs):
    """Arguments of `prometheus_query_range` (proto `PrometheusRangeQueryArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"range", "end", "step"})

    query: str = Field(min_length=1, max_length=4000, description="PromQL expression.")
    range: str = Field(
        default="1h",
        max_length=32,
        description="Window ending at `end`, a duration such as 30s, 15m, 1h or 2d. Default 1h.",
    )
    end: str | None = Field(
        default=None,
        max_length=64,
        description=(
            "End of the window: now, now-30m, unix seconds or an RFC 3339 time "
            "(2026-01-01T10:00:00Z); empty means now."
        ),
    )
    step: str | None = Field(
        default=None,
        max_length=32,
        description=(
            "Resolution, a duration such as 30s, 15m, 1h or 2d; empty gives about 120 points."
        ),
    )


class PrometheusLabelValuesArgs(ProtoArgs):
    """Arguments of `prometheus_label_values` (proto `PrometheusLabelValuesArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"label"})

    label: str = Field(
        default="__name__",
        max_length=128,
        pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$",
        description='Label name; "__name__" lists metric names. Default __name__.',
    )
    match: list[Annotated[str, Field(max_length=4000)]] = Field(
        default_factory=list,
        max_length=5,
        description='Series selectors to narrow by, e.g. {namespace="payments"}.',
    )


class PrometheusSeriesArgs(ProtoArgs):
    """Arguments of `prometheus_series` (proto `PrometheusSeriesArgs`)."""

    match: list[Annotated[str, Field(max_length=4000)]] = Field(
        min_length=1,
        max_length=5,
        description=(
            "Series selectors (at least one), e.g. "
            'container_memory_working_set_bytes{pod=~"api-.*"}.'
        ),
    )


class AlertmanagerActiveAlertsArgs(ProtoArgs):
    """Arguments of `alertmanager_active_alerts` (proto `AlertmanagerActiveAlertsArgs`)."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({"namespace"})

    namespace: _Namespace | None = Field(
        default=None, description="Only alerts with this namespace label."
    )
    labels: dict[
        Annotated[str, Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")],
        Annotated[str, Field(max_length=256)],
    ] = Field(
        default_factory=dict,
        json_schema_extra=_values_only,
        max_length=10,
        description='Only alerts carrying all these labels, e.g. {"service": "payment-api"}.',
    )


class KubernetesNodeStatsArgs(ProtoArgs):
    """Arguments of `kubernetes_node_stats` (proto `KubernetesNodeStatsArgs`)."""

    node: str = Field(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$",
        description="Node name.",
    )
