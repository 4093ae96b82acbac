"""The real test cluster with the catalog's resources, for the informer's tests."""

from tests.adapters.catalog.kubernetes.conftest import (
    catalog_cluster,
    kube_api,
    kube_cluster,
    kubeconfig,
    namespace,
    resources,
)

__all__ = ["catalog_cluster", "kube_api", "kube_cluster", "kubeconfig", "namespace", "resources"]
