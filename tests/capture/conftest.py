"""The real test cluster (kube-apiserver + etcd), a test kubelet, and a reader of it."""

from tests.toolsets.kubernetes.conftest import (
    kube_api,
    kube_cluster,
    kubelet,
    namespace,
    node_name,
    reader,
)

__all__ = ["kube_api", "kube_cluster", "kubelet", "namespace", "node_name", "reader"]
