"""Where the cluster is and how to authenticate: in-cluster, else `KUBECONFIG`.

Design notes: docs/internals.md (`adapters/kubernetes/credentials.py`).
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hapi_grpc.domain.sensitive import register_secret

if TYPE_CHECKING:
    # Imported when credentials are loaded, not with the server: the client
    # package and its generated models cost ~1 s of startup and tens of MB
    # on every replica, with or without a cluster to read.
    from kubernetes_asyncio.client import Configuration

__all__ = ["ClusterConnection", "credentials_present", "load_connection"]

_SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass
class ClusterConnection:
    """The API server's URL, a TLS context, and a source of the auth header."""

    url: str
    ssl_context: ssl.SSLContext | bool
    configuration: Configuration
    source: str  # "in-cluster" or the kubeconfig path

    async def auth_header(self) -> str | None:
        """`Bearer ...` (re-read when the loader refreshes it), basic auth, or None."""
        settings = await self.configuration.auth_settings()
        value = (settings.get("BearerToken") or {}).get("value")
        if value:
            token = str(value).removeprefix("Bearer ").strip()
            # Never printed, whatever logs an error later; a rotated token replaces the old one.
            register_secret(token, owner=f"kubernetes token {self.source}")
            return f"Bearer {token}"
        if self.configuration.username and self.configuration.password:
            register_secret(self.configuration.password, owner=f"kubernetes password {self.source}")
            return str(self.configuration.get_basic_auth_token())
        return None


def _in_cluster(environ: os._Environ[str] | dict[str, str]) -> bool:
    return bool(environ.get("KUBERNETES_SERVICE_HOST")) and (_SA_DIR / "token").is_file()


def _kubeconfig_path(environ: os._Environ[str] | dict[str, str]) -> Path | None:
    # As kubectl: the first file of KUBECONFIG that exists, else ~/.kube/config.
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if not listed:
        try:
            listed = [str(Path.home() / ".kube" / "config")]
        except RuntimeError:  # no HOME and no passwd entry: an arbitrary container UID
            return None
    for candidate in listed:
        try:
            path = Path(candidate).expanduser()
        except RuntimeError:
            continue
        if path.is_file():
            return path
    return None


def credentials_present(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether `auto` should turn the toolset on."""
    return _in_cluster(environ) or _kubeconfig_path(environ) is not None


def _ssl_context(config: Configuration) -> ssl.SSLContext | bool:
    if not config.verify_ssl:
        return False
    context = ssl.create_default_context(cafile=config.ssl_ca_cert)
    if config.cert_file:
        context.load_cert_chain(config.cert_file, keyfile=config.key_file)
    return context


async def load_connection(
    environ: os._Environ[str] | dict[str, str] = os.environ,
) -> ClusterConnection | None:
    """The connection from in-cluster credentials or the kubeconfig; None when neither.

    Raises ConfigException when credentials exist but cannot be used.
    """
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import ConfigException, load_incluster_config, load_kube_config

    config = Configuration()
    if _in_cluster(environ):
        load_incluster_config(client_configuration=config)
        source = "in-cluster"
    else:
        path = _kubeconfig_path(environ)
        if path is None:
            return None
        await load_kube_config(
            config_file=str(path), client_configuration=config, persist_config=False
        )
        source = str(path)
    if not config.host:
        raise ConfigException(f"no API server address in {source}")
    return ClusterConnection(config.host.rstrip("/"), _ssl_context(config), config, source)
