"""Settings of the `kubernetes` toolset, read from `HAPI_KUBERNETES*` variables.

`HAPI_KUBERNETES`: `auto` (on when in-cluster or kubeconfig credentials are
found), `on` (credentials required: startup fails without them) or `off`.
Scope: `HAPI_KUBERNETES_NAMESPACES_ALLOW` / `_DENY` (comma-separated, shell
patterns such as `kube-*`), `HAPI_KUBERNETES_KINDS` (comma-separated kind
allow-list; empty: every kind the cluster serves). Budgets:
`HAPI_KUBERNETES_MAX_CALLS` (per investigation, default 20) and
`HAPI_KUBERNETES_CALL_TIMEOUT` (seconds per call, default 5).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["KubernetesSettings"]

Mode = Literal["auto", "on", "off"]


def _items(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


@dataclass(frozen=True)
class KubernetesSettings:
    mode: Mode = "auto"
    namespaces_allow: tuple[str, ...] = ()
    namespaces_deny: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    max_calls: int = 20
    call_timeout: float = 5.0
    max_output_chars: int = 12_000  # per call
    investigation_output_chars: int = 60_000

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "on", "off"):
            raise ValueError("HAPI_KUBERNETES must be auto, on or off")
        if not 0 <= self.max_calls <= 200:
            raise ValueError("HAPI_KUBERNETES_MAX_CALLS must be in [0, 200]")
        if not 0 < self.call_timeout <= 300:
            raise ValueError("HAPI_KUBERNETES_CALL_TIMEOUT must be in (0, 300]")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> KubernetesSettings:
        """Settings from the environment; ValueError names the variable that is wrong."""
        mode = environ.get("HAPI_KUBERNETES", "auto").strip().lower() or "auto"
        try:
            max_calls = int(environ.get("HAPI_KUBERNETES_MAX_CALLS", "20"))
        except ValueError:
            raise ValueError("HAPI_KUBERNETES_MAX_CALLS must be an integer") from None
        try:
            timeout = float(environ.get("HAPI_KUBERNETES_CALL_TIMEOUT", "5"))
        except ValueError:
            raise ValueError("HAPI_KUBERNETES_CALL_TIMEOUT must be a number") from None
        return cls(
            mode=mode,  # type: ignore[arg-type]  # checked in __post_init__
            namespaces_allow=_items(environ.get("HAPI_KUBERNETES_NAMESPACES_ALLOW", "")),
            namespaces_deny=_items(environ.get("HAPI_KUBERNETES_NAMESPACES_DENY", "")),
            kinds=_items(environ.get("HAPI_KUBERNETES_KINDS", "")),
            max_calls=max_calls,
            call_timeout=timeout,
        )
