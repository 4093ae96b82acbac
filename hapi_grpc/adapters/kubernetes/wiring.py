"""Builds the `kubernetes` toolset source from `KubernetesSettings`, or none.

`open_toolset` is the opener its spec names (`domain/toolsets/kubernetes/spec.py`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hapi_grpc.adapters.kubernetes.credentials import credentials_present
from hapi_grpc.adapters.kubernetes.settings import KubernetesSettings
from hapi_grpc.domain.toolsets.kubernetes.settings import KubernetesToolsetSettings
from hapi_grpc.domain.toolsets.spec import OpenContext, Opened

# The reader and the toolset (with its argument models, ~8 MB) are imported
# only when the tools are on: a server without a cluster never needs them.
if TYPE_CHECKING:
    from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
    from hapi_grpc.domain.toolsets.kubernetes.tools import KubernetesToolsetSource

__all__ = [
    "KubernetesWiring",
    "kubernetes_settings",
    "open_kubernetes",
    "open_toolset",
    "toolset_source",
]

log = logging.getLogger(__name__)


@dataclass
class KubernetesWiring:
    reader: ApiServerReader
    source: KubernetesToolsetSource

    async def close(self) -> None:
        await self.reader.close()


def toolset_source(
    reader: ApiServerReader, settings: KubernetesSettings
) -> KubernetesToolsetSource:
    from hapi_grpc.domain.toolsets.kubernetes.scope import KubernetesScope
    from hapi_grpc.domain.toolsets.kubernetes.tools import KubernetesToolsetSource
    from hapi_grpc.domain.toolsets.toolset import ToolsetLimits

    return KubernetesToolsetSource(
        reader,
        KubernetesScope.of(settings.namespaces_allow, settings.namespaces_deny, settings.kinds),
        ToolsetLimits(
            max_calls=settings.max_calls,
            call_timeout=settings.call_timeout,
            max_output_chars=settings.max_output_chars,
        ),
        settings.investigation_output_chars,
    )


async def open_kubernetes(
    settings: KubernetesSettings, environ: Mapping[str, str] = os.environ
) -> KubernetesWiring | None:
    """The toolset when enabled (`on`, or `auto` with credentials found); else None.

    Credentials are the pod's service account, else `KUBECONFIG` (read from
    `environ`) or `~/.kube/config`. `on` without usable credentials raises
    ValueError, so a misconfiguration stops startup instead of silently
    investigating without the cluster.
    """
    env = dict(environ)
    if settings.mode == "off" or (settings.mode == "auto" and not credentials_present(env)):
        log.info("kubernetes investigation tools off", extra={"mode": settings.mode})
        return None
    from hapi_grpc.adapters.kubernetes.credentials import load_connection
    from hapi_grpc.adapters.kubernetes.reader import ApiServerReader

    try:
        connection = await load_connection(env)
    except Exception as exc:
        if settings.mode == "on":
            raise ValueError(
                f"HAPI_KUBERNETES=on but the credentials cannot be used: {exc}"
            ) from exc
        log.warning("kubernetes credentials found but unusable; tools off: %s", type(exc).__name__)
        return None
    if connection is None:
        if settings.mode == "on":
            raise ValueError("HAPI_KUBERNETES=on but no in-cluster or KUBECONFIG credentials")
        return None
    reader = ApiServerReader(connection)
    log.info("kubernetes investigation tools on", extra={"source": connection.source})
    return KubernetesWiring(reader, toolset_source(reader, settings))


def kubernetes_settings(settings: KubernetesToolsetSettings) -> KubernetesSettings:
    """The adapter's settings from the validated `HAPI_KUBERNETES*` fields."""
    return KubernetesSettings(
        mode=settings.kubernetes,
        namespaces_allow=tuple(settings.kubernetes_namespaces_allow),
        namespaces_deny=tuple(settings.kubernetes_namespaces_deny),
        kinds=tuple(settings.kubernetes_kinds),
        max_calls=settings.kubernetes_max_calls,
        call_timeout=settings.kubernetes_call_timeout,
    )


async def open_toolset(settings: KubernetesToolsetSettings, context: OpenContext) -> Opened | None:
    """The toolset when enabled; `HAPI_KUBERNETES=on` without usable credentials raises
    ValueError (a configuration error)."""
    wiring = await open_kubernetes(kubernetes_settings(settings))
    return Opened([wiring.source], wiring.close) if wiring is not None else None
