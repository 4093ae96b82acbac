"""The real test cluster and a reader of it, for the analyst's investigations over gRPC."""

from tests.toolsets.kubernetes.conftest import (
    kube_api,
    kube_cluster,
    kubelet,
    namespace,
    node_name,
    reader,
)

__all__ = ["kube_api", "kube_cluster", "kubelet", "namespace", "node_name", "reader"]
