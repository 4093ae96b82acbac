"""Settings of the `kubernetes` toolset.

Built by the composition root from the `HAPI_KUBERNETES*` fields of
`hapi_grpc.config.Settings`, which validates them. `mode`: `auto` (on when
in-cluster or kubeconfig credentials are found), `on` (credentials required:
startup fails without them) or `off`. Scope: namespace allow/deny shell
patterns (`kube-*`) and a kind allow-list (empty: every kind the cluster
serves). Budgets: calls per investigation and seconds per call; output caps
per call and per investigation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hapi_grpc.domain.toolsets.kubernetes.spec import MAX_OUTPUT_CHARS

__all__ = ["KubernetesSettings", "Mode"]

Mode = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class KubernetesSettings:
    mode: Mode = "auto"
    namespaces_allow: tuple[str, ...] = ()
    namespaces_deny: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    max_calls: int = 20
    call_timeout: float = 5.0
    max_output_chars: int = MAX_OUTPUT_CHARS  # per call: the spec's cap
    investigation_output_chars: int = 60_000
