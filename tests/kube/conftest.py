"""A real kube-apiserver + etcd for the whole session, a test kubelet, fresh names per test."""

from tests.fakes.kube_pytest import kube_api, kube_cluster, kubelet, namespace, node_name

__all__ = ["kube_api", "kube_cluster", "kubelet", "namespace", "node_name"]
