"""HAPI_KUBERNETES modes, scope settings, and credentials from a kubeconfig file."""

from __future__ import annotations

import pwd
from pathlib import Path

import pytest

from hapi_grpc.adapters.kubernetes.credentials import credentials_present
from hapi_grpc.config import ConfigError, Settings
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.toolsets.kubernetes import KubernetesToolset, KubernetesToolsetSettings
from tests.fakes.kube_cluster import KubeCluster


def test_settings_from_env() -> None:
    own = KubernetesToolset.settings_from(
        Settings.from_env(
            {
                "HAPI_KUBERNETES": "On",
                "HAPI_KUBERNETES_NAMESPACES_ALLOW": "prod-*, payments",
                "HAPI_KUBERNETES_NAMESPACES_DENY": "kube-system",
                "HAPI_KUBERNETES_KINDS": "Pod,Deployment",
                "HAPI_KUBERNETES_MAX_CALLS": "7",
                "HAPI_KUBERNETES_CALL_TIMEOUT": "2.5",
            }
        )
    )
    assert own is not None
    assert (own.kubernetes, own.kubernetes_namespaces_allow, own.kubernetes_namespaces_deny) == (
        "on",
        ["prod-*", "payments"],
        ["kube-system"],
    )
    assert (own.kubernetes_kinds, own.kubernetes_max_calls, own.kubernetes_call_timeout) == (
        ["Pod", "Deployment"],
        7,
        2.5,
    )
    limits = KubernetesToolset(own).limits()
    assert (limits.max_calls, limits.call_timeout) == (7, 2.5)
    assert KubernetesToolset.settings_from(Settings.from_env({})) == KubernetesToolsetSettings()
    with pytest.raises(ConfigError, match="HAPI_KUBERNETES: Input should be 'auto'"):
        Settings.from_env({"HAPI_KUBERNETES": "maybe"})
    with pytest.raises(ConfigError, match="HAPI_KUBERNETES_MAX_CALLS"):
        Settings.from_env({"HAPI_KUBERNETES_MAX_CALLS": "x"})


async def test_auto_without_credentials_is_off_and_on_without_them_fails(tmp_path: Path) -> None:
    empty = {"HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")}
    assert await _toolset("auto").open(environ=empty) is None
    assert await _toolset("off").open(environ=empty) is None
    with pytest.raises(ValueError, match="HAPI_KUBERNETES=on"):
        await _toolset("on").open(environ=empty)


async def test_auto_with_a_kubeconfig_reads_the_cluster(
    kube_cluster: KubeCluster, tmp_path: Path
) -> None:
    path = kube_cluster.write_kubeconfig(tmp_path / "config")
    opened = await _toolset("auto").open(environ={"HOME": str(tmp_path), "KUBECONFIG": str(path)})
    assert opened is not None and opened.close is not None
    try:
        (source,) = opened.sources
        reader = source.reader  # type: ignore[attr-defined]
        assert reader.url == kube_cluster.url
        rtype = await reader.resolve("deploy", 5.0)
        assert (rtype.group, rtype.kind) == ("apps", "Deployment")
        assert source(Caller()).limits.max_calls == 20
    finally:
        await opened.close()


def _toolset(mode: str) -> KubernetesToolset:
    return KubernetesToolset(KubernetesToolsetSettings(kubernetes=mode))  # type: ignore[arg-type]


def test_auto_without_a_home_is_off_for_a_uid_with_no_passwd_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a container runtime may give the image's numeric user: no HOME and no
    # passwd entry, so `Path.home()` raises. (The interpreter lives where another
    # UID cannot run it, so the lookup is what stands in for the switch.)
    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert credentials_present({}) is False
