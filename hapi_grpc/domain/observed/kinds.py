"""Facts of the kinds the premise packs read besides Pods, Nodes and workloads.

Leases (is the kubelet alive), PodDisruptionBudgets (may a drain evict), LimitRanges
and ResourceQuotas (would a change be admitted), StorageClasses (may a claim grow),
NetworkPolicies, Istio AuthorizationPolicies and cert-manager issuers (is the named
object the cause). Each reads only what a premise compares; timestamps become epoch
seconds (`epoch`) so CEL compares them as numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

__all__ = ["EXTRA_KINDS", "epoch", "gitops_managed", "selector_labels"]

_ITEMS = 20
# Label and annotation domains of the GitOps controllers, and the values of
# `app.kubernetes.io/managed-by` they set: an object they reconcile gets a direct
# change reverted at the next sync.
_GITOPS_DOMAINS = ("argoproj.io/", "fluxcd.io/")
_GITOPS_MANAGERS = frozenset(
    {"argocd", "argo-cd", "flux", "fluxcd", "kustomize-controller", "helm-controller"}
)


def epoch(value: Any) -> float:
    """RFC 3339 time as seconds since the epoch; 0.0 when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _map(obj: Any, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _strings(mapping: Any) -> dict[str, str]:
    if not isinstance(mapping, dict):
        return {}
    return {str(k): str(v)[:300] for k, v in list(mapping.items())[:50]}


def gitops_managed(labels: dict[str, str], annotations: dict[str, str]) -> bool:
    """Whether Argo CD or Flux reconciles the object, by the marks they leave on it."""
    keys = [*labels, *annotations]
    if any(domain in k for k in keys for domain in _GITOPS_DOMAINS):
        return True
    return labels.get("app.kubernetes.io/managed-by", "").lower() in _GITOPS_MANAGERS


def selector_labels(selector: Any) -> tuple[dict[str, str], bool]:
    """A label selector's `matchLabels`, and whether it also has `matchExpressions`."""
    if not isinstance(selector, dict):
        return {}, False
    return _strings(selector.get("matchLabels")), bool(selector.get("matchExpressions"))


def _lease(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    out["holder"] = str(spec.get("holderIdentity") or "")
    out["renewed_at"] = epoch(spec.get("renewTime"))
    out["duration_seconds"] = _int(spec.get("leaseDurationSeconds"))


def _disruption_budget(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec, status = _map(obj, "spec"), _map(obj, "status")
    out["selector"], out["selector_expressions"] = selector_labels(spec.get("selector"))
    out["disruptions_allowed"] = _int(status.get("disruptionsAllowed"))
    out["current_healthy"] = _int(status.get("currentHealthy"))
    out["desired_healthy"] = _int(status.get("desiredHealthy"))
    out["expected_pods"] = _int(status.get("expectedPods"))


def _limit_range(obj: dict[str, Any], out: dict[str, Any]) -> None:
    limits = [i for i in (_map(obj, "spec").get("limits") or []) if isinstance(i, dict)]
    container = [i for i in limits if i.get("type") == "Container"]
    out["container_max"] = _strings(container[0].get("max")) if container else {}


def _quota(obj: dict[str, Any], out: dict[str, Any]) -> None:
    status = _map(obj, "status")
    out["hard"] = _strings(status.get("hard") or _map(obj, "spec").get("hard"))
    out["used"] = _strings(status.get("used"))


def _storage_class(obj: dict[str, Any], out: dict[str, Any]) -> None:
    out["allow_expansion"] = obj.get("allowVolumeExpansion") is True
    out["provisioner"] = str(obj.get("provisioner") or "")


def _network_policy(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    out["selector"], out["selector_expressions"] = selector_labels(spec.get("podSelector"))
    types = [str(t) for t in spec.get("policyTypes") or [] if isinstance(t, str)]
    if not types:  # the API's default: Ingress, and Egress when egress rules are given
        types = ["Ingress", *(["Egress"] if spec.get("egress") else [])]
    out["policy_types"] = types[:2]
    out["ingress_rules"] = len(spec.get("ingress") or [])
    out["egress_rules"] = len(spec.get("egress") or [])


def _authorization_policy(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    out["selector"], _ = selector_labels({"matchLabels": _map(spec, "selector").get("matchLabels")})
    out["action"] = str(spec.get("action") or "ALLOW")
    out["rules"] = len(spec.get("rules") or [])


def _issuer(obj: dict[str, Any], out: dict[str, Any]) -> None:
    out["ca_secret"] = str(_map(_map(obj, "spec"), "ca").get("secretName") or "")


def _certificate(obj: dict[str, Any], out: dict[str, Any]) -> None:
    spec = _map(obj, "spec")
    out["secret_name"] = str(spec.get("secretName") or "")
    ref = _map(spec, "issuerRef")
    out["issuer"] = {"kind": str(ref.get("kind") or "Issuer"), "name": str(ref.get("name") or "")}


# kind -> what fills its facts (`object_facts` calls it after the common fields).
EXTRA_KINDS: dict[str, Callable[[dict[str, Any], dict[str, Any]], None]] = {
    "Lease": _lease,
    "PodDisruptionBudget": _disruption_budget,
    "LimitRange": _limit_range,
    "ResourceQuota": _quota,
    "StorageClass": _storage_class,
    "NetworkPolicy": _network_policy,
    "AuthorizationPolicy": _authorization_policy,
    "Issuer": _issuer,
    "ClusterIssuer": _issuer,
    "Certificate": _certificate,
}
