"""The catalog source settings: what each value picks, and the mistakes refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from hapi_grpc.app import build_catalog
from hapi_grpc.config import ConfigError, Settings


def test_auto_picks_data_storage_when_its_url_is_set() -> None:
    assert Settings().resolved_catalog_source == "embedded"
    remote = Settings(data_storage_url="http://ds:8080")
    assert remote.resolved_catalog_source == "datastorage"
    # Data Storage for history only, the catalog from the cluster.
    both = Settings(data_storage_url="http://ds:8080", catalog_source="kubernetes")
    assert both.resolved_catalog_source == "kubernetes"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"HAPI_CATALOG_SOURCE": "datastorage"}, "needs HAPI_DATA_STORAGE_URL"),
        ({"HAPI_CATALOG_SOURCE": "cluster"}, "HAPI_CATALOG_SOURCE"),
        (
            {"HAPI_CATALOG_SOURCE": "kubernetes", "HAPI_CATALOG_NAMESPACE": "Not_A_Namespace"},
            "HAPI_CATALOG_NAMESPACE: must be a namespace name",
        ),
        ({"HAPI_CATALOG_NAMESPACE": "kubernaut"}, "applies to HAPI_CATALOG_SOURCE=kubernetes"),
    ],
)
def test_mistakes_are_refused_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env(env)


def test_the_cluster_catalog_needs_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/missing")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="needs in-cluster or KUBECONFIG credentials"):
        build_catalog(Settings(catalog_source="kubernetes"))
