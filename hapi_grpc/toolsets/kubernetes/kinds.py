"""Facts of the kinds the premise packs read besides Pods, Nodes and workloads.

Design notes: docs/internals.md (`toolsets/kubernetes/kinds.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hapi_grpc.domain.observed.facts import (
    AccessPolicyFacts,
    AcmeFacts,
    AutoscalerFacts,
    CertificateFacts,
    ClaimFacts,
    DisruptionBudgetFacts,
    IssuerFacts,
    LeaseFacts,
    LimitRangeFacts,
    NetworkPolicyFacts,
    ObjectFacts,
    QuotaFacts,
    ScalingMetric,
    StorageClassFacts,
)

__all__ = ["EXTRA_KINDS", "epoch", "gitops_managed", "integer", "mapping", "strings"]

# Label and annotation domains of the GitOps controllers, and the values of
# `app.kubernetes.io/managed-by` they set: an object they reconcile gets a direct
# change reverted at the next sync.
_GITOPS_DOMAINS = ("argoproj.io/", "fluxcd.io/")
_METRICS = 10
_REASON = 1024
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


def mapping(obj: Any, key: str) -> dict[str, Any]:
    """`obj[key]` when it is a mapping, else an empty one."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def integer(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def strings(value: Any) -> dict[str, str]:
    """The first 50 entries of a mapping as strings of at most 300 characters."""
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v)[:300] for k, v in list(value.items())[:50]}


def gitops_managed(labels: dict[str, str], annotations: dict[str, str]) -> bool:
    """Whether Argo CD or Flux reconciles the object, by the marks they leave on it."""
    keys = [*labels, *annotations]
    if any(domain in k for k in keys for domain in _GITOPS_DOMAINS):
        return True
    return labels.get("app.kubernetes.io/managed-by", "").lower() in _GITOPS_MANAGERS


def _selector(selector: Any) -> tuple[dict[str, str], bool]:
    """A label selector's `matchLabels`, and whether it also has `matchExpressions`."""
    if not isinstance(selector, dict):
        return {}, False
    return strings(selector.get("matchLabels")), bool(selector.get("matchExpressions"))


def _lease(obj: dict[str, Any], out: ObjectFacts) -> LeaseFacts:
    spec = mapping(obj, "spec")
    return LeaseFacts(
        **out,
        holder=str(spec.get("holderIdentity") or ""),
        renewed_at=epoch(spec.get("renewTime")),
        duration_seconds=integer(spec.get("leaseDurationSeconds")),
    )


def _disruption_budget(obj: dict[str, Any], out: ObjectFacts) -> DisruptionBudgetFacts:
    spec, status = mapping(obj, "spec"), mapping(obj, "status")
    selector, expressions = _selector(spec.get("selector"))
    return DisruptionBudgetFacts(
        **out,
        selector=selector,
        selector_expressions=expressions,
        disruptions_allowed=integer(status.get("disruptionsAllowed")),
        current_healthy=integer(status.get("currentHealthy")),
        desired_healthy=integer(status.get("desiredHealthy")),
        expected_pods=integer(status.get("expectedPods")),
    )


def _limit_range(obj: dict[str, Any], out: ObjectFacts) -> LimitRangeFacts:
    limits = [i for i in (mapping(obj, "spec").get("limits") or []) if isinstance(i, dict)]
    container = [i for i in limits if i.get("type") == "Container"]
    return LimitRangeFacts(
        **out, container_max=strings(container[0].get("max")) if container else {}
    )


def _quota(obj: dict[str, Any], out: ObjectFacts) -> QuotaFacts:
    status = mapping(obj, "status")
    return QuotaFacts(
        **out,
        hard=strings(status.get("hard") or mapping(obj, "spec").get("hard")),
        used=strings(status.get("used")),
    )


def _storage_class(obj: dict[str, Any], out: ObjectFacts) -> StorageClassFacts:
    return StorageClassFacts(
        **out,
        allow_expansion=obj.get("allowVolumeExpansion") is True,
        provisioner=str(obj.get("provisioner") or ""),
    )


def _network_policy(obj: dict[str, Any], out: ObjectFacts) -> NetworkPolicyFacts:
    spec = mapping(obj, "spec")
    selector, expressions = _selector(spec.get("podSelector"))
    types = [str(t) for t in spec.get("policyTypes") or [] if isinstance(t, str)]
    if not types:  # the API's default: Ingress, and Egress when egress rules are given
        types = ["Ingress", *(["Egress"] if spec.get("egress") else [])]
    return NetworkPolicyFacts(
        **out,
        selector=selector,
        selector_expressions=expressions,
        policy_types=types[:2],
        ingress_rules=len(spec.get("ingress") or []),
        egress_rules=len(spec.get("egress") or []),
    )


def _authorization_policy(obj: dict[str, Any], out: ObjectFacts) -> AccessPolicyFacts:
    spec = mapping(obj, "spec")
    selector, _ = _selector({"matchLabels": mapping(spec, "selector").get("matchLabels")})
    return AccessPolicyFacts(
        **out,
        selector=selector,
        action=str(spec.get("action") or "ALLOW"),
        rules=len(spec.get("rules") or []),
    )


def _issuer(obj: dict[str, Any], out: ObjectFacts) -> IssuerFacts:
    spec = mapping(obj, "spec")
    ca = mapping(spec, "ca")
    return IssuerFacts(**out, ca_secret=str(ca.get("secretName") or ""), acme="acme" in spec)


def _certificate(obj: dict[str, Any], out: ObjectFacts) -> CertificateFacts:
    spec = mapping(obj, "spec")
    ref = mapping(spec, "issuerRef")
    status = mapping(obj, "status")
    return CertificateFacts(
        **out,
        secret_name=str(spec.get("secretName") or ""),
        issuer={"kind": str(ref.get("kind") or "Issuer"), "name": str(ref.get("name") or "")},
        failed_issuance_attempts=integer(status.get("failedIssuanceAttempts")),
        last_failure_at=epoch(status.get("lastFailureTime")),
    )


def _acme(obj: dict[str, Any], out: ObjectFacts) -> ObjectFacts:
    """An Order or Challenge of cert-manager's ACME group; another group's kind of
    the same name keeps only the common facts."""
    if not str(obj.get("apiVersion") or "").startswith("acme.cert-manager.io/"):
        return out
    spec, status = mapping(obj, "spec"), mapping(obj, "status")
    ref = mapping(spec, "issuerRef")
    return AcmeFacts(
        **out,
        acme_state=str(status.get("state") or ""),
        acme_reason=str(status.get("reason") or "")[:_REASON],
        presented=status.get("presented") is True,
        issuer={"kind": str(ref.get("kind") or "Issuer"), "name": str(ref.get("name") or "")},
    )


def _autoscaler(obj: dict[str, Any], out: ObjectFacts) -> AutoscalerFacts:
    spec, status = mapping(obj, "spec"), mapping(obj, "status")
    target = mapping(spec, "scaleTargetRef")
    return AutoscalerFacts(
        **out,
        min_replicas=int(spec.get("minReplicas") or 1),
        max_replicas=int(spec.get("maxReplicas") or 0),
        current_replicas=int(status.get("currentReplicas") or 0),
        target={"kind": str(target.get("kind", "")), "name": str(target.get("name", ""))},
        metrics=_scaling_metrics(spec.get("metrics"), status.get("currentMetrics")),
    )


def _metric_key(entry: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(type, name, body) of an autoscaling/v2 metric entry, spec or status."""
    kind = str(entry.get("type") or "")
    body = mapping(entry, kind[:1].lower() + kind[1:]) if kind else {}
    name = body.get("name") or mapping(body, "metric").get("name") or ""
    return kind, str(name), body


def _scaling_metrics(specs: Any, currents: Any) -> list[ScalingMetric]:
    """The metrics an autoscaler scales on, each with its current value when reported."""
    now = {}
    for entry in (currents or [])[:_METRICS] if isinstance(currents, list) else []:
        if isinstance(entry, dict):
            kind, name, body = _metric_key(entry)
            now[(kind, name)] = mapping(body, "current")
    out: list[ScalingMetric] = []
    for entry in (specs or [])[:_METRICS] if isinstance(specs, list) else []:
        if not isinstance(entry, dict):
            continue
        kind, name, body = _metric_key(entry)
        target, current = mapping(body, "target"), now.get((kind, name), {})
        out.append(
            ScalingMetric(
                type=kind,
                name=name,
                target_utilization=integer(target.get("averageUtilization"), -1),
                current_utilization=integer(current.get("averageUtilization"), -1),
                target_average=str(target.get("averageValue") or ""),
                current_average=str(current.get("averageValue") or ""),
            )
        )
    return out


def _claim(obj: dict[str, Any], out: ObjectFacts) -> ClaimFacts:
    spec, status = mapping(obj, "spec"), mapping(obj, "status")
    requests = (spec.get("resources") or {}).get("requests") or {}
    return ClaimFacts(
        **out,
        phase=str(status.get("phase", "")),
        storage_request=str(requests.get("storage", "")),
        capacity=str((status.get("capacity") or {}).get("storage", "")),
        storage_class=str(spec.get("storageClassName") or ""),
        # A resize the resizer or the kubelet has not finished (docs/premises.md, ExpandPVC).
        allocated_storage=str((status.get("allocatedResources") or {}).get("storage", "")),
        resize_status=str((status.get("allocatedResourceStatuses") or {}).get("storage", "")),
    )


# kind -> its facts, from the object and the facts every object has (`object_facts`).
EXTRA_KINDS: dict[str, Callable[[dict[str, Any], ObjectFacts], ObjectFacts]] = {
    "HorizontalPodAutoscaler": _autoscaler,
    "PersistentVolumeClaim": _claim,
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
    "Order": _acme,
    "Challenge": _acme,
}
