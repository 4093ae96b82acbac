"""Argument models of the `kubernetes` tools: the generated `tools.proto` models.

Fields, bounds, patterns, defaults and descriptions come from the
`hapi.v1.Kubernetes*Args` messages (`arguments_gen`). What a proto cannot say
is added here: surrounding whitespace is trimmed before the patterns apply,
and the log filter must compile as RE2.
"""

from __future__ import annotations

import re2
from pydantic import ConfigDict, field_validator

from hapi_grpc.domain.toolsets import arguments_gen as proto

_TRIMMED = ConfigDict(str_strip_whitespace=True)


class KubernetesGetArgs(proto.KubernetesGetArgs):
    model_config = _TRIMMED


class KubernetesListArgs(proto.KubernetesListArgs):
    model_config = _TRIMMED


class KubernetesEventsArgs(proto.KubernetesEventsArgs):
    model_config = _TRIMMED


class KubernetesOwnerChainArgs(proto.KubernetesOwnerChainArgs):
    model_config = _TRIMMED


class KubernetesNodeStatsArgs(proto.KubernetesNodeStatsArgs):
    model_config = _TRIMMED


class KubernetesPodLogsArgs(proto.KubernetesPodLogsArgs):
    model_config = _TRIMMED

    @field_validator("filter")
    @classmethod
    def _re2_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re2.compile(value)
            except re2.error as exc:
                raise ValueError(f"not an RE2 pattern: {exc}") from None
        return value
