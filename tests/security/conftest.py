"""The real test cluster and the authorization tests' world in it."""

from tests.fakes.kube_cluster import kube_cluster
from tests.security.kube_world import world

__all__ = ["kube_cluster", "world"]
