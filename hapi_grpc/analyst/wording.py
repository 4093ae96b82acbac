"""How the analyst cites what it read: `object field=value` lines for the answer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["condition_lines", "condition_text", "gitops_marks", "taint_text"]

# Labels and annotations Argo CD and Flux put on the objects they reconcile.
_GITOPS_PREFIXES = ("argoproj.io/", "fluxcd.io/")
_GITOPS_MANAGERS = frozenset(
    {"argocd", "argo-cd", "flux", "fluxcd", "kustomize-controller", "helm-controller"}
)


def condition_text(condition: dict[str, str]) -> str:
    """`Ready=False (KubeletNotReady: message)`."""
    detail = ": ".join(p for p in (condition["reason"], condition["message"]) if p)
    text = f"{condition['type']}={condition['status']}"
    return f"{text} ({detail})" if detail else text


def condition_lines(label: str, conditions: Iterable[dict[str, str]]) -> tuple[str, ...]:
    """Conditions worth citing: Ready that is not True, a pressure that is True, any
    other condition whose status is False (Available=False, ...)."""
    return tuple(
        f"{label} status.conditions {condition_text(c)}"
        for c in conditions
        if (c["type"] == "Ready" and c["status"] != "True")
        or ("Pressure" in c["type"] and c["status"] == "True")
        or (c["type"] != "Ready" and "Pressure" not in c["type"] and c["status"] == "False")
    )


def taint_text(taint: dict[str, str]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key', '')}{value}:{taint.get('effect', '')}"


def gitops_marks(label: str, obj: dict[str, Any]) -> tuple[str, ...]:
    """The first label or annotation naming a GitOps controller (Argo CD, Flux)."""
    for section in ("labels", "annotations"):
        for key, value in (obj.get(section) or {}).items():
            managed = key == "app.kubernetes.io/managed-by" and value.lower() in _GITOPS_MANAGERS
            if managed or _gitops_key(key):
                return (f"{label} metadata.{section}[{key}]={value} (managed by GitOps)",)
    return ()


def _gitops_key(key: str) -> bool:
    """`argoproj.io/...`, `fluxcd.io/...` and their subdomains (`kustomize.toolkit.fluxcd.io/`)."""
    prefix = key.lower().partition("/")[0] + "/"
    return any(prefix == p or prefix.endswith("." + p) for p in _GITOPS_PREFIXES)
