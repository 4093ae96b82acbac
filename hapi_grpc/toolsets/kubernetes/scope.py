"""What the `kubernetes` tools may read: namespaces, kinds, and never Secrets.

Every check here runs before any request is made. A refusal is an
actionable message for the model (what is allowed instead), not an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from hapi_grpc.adapters.kubernetes.reader import ResourceType
from hapi_grpc.toolsets.namespaces import NamespaceBound, ScopeRefusal

__all__ = [
    "KubernetesScope",
    "ScopeRefusal",
    "kind_key",
]

# Kinds whose objects carry credentials by design; refused whatever the
# settings say. (ServiceAccount tokens live in Secrets or the TokenRequest
# subresource, which no tool reaches.)
_ALWAYS_REFUSED = frozenset({"secret"})


def kind_key(kind: str) -> str:
    """A spelling-independent key for a kind: `v1/Secret`, `secrets`, `Secrets.v1.` -> `secret`.

    The group/version prefix and a `.group` suffix are dropped, case is
    folded and a plural `s` is removed, so every spelling of one kind meets
    the same check.
    """
    text = kind.strip().strip("/").lower()
    text = text.rsplit("/", 1)[-1]
    text = text.split(".", 1)[0].strip()
    if text.endswith("ies") and len(text) > 4:
        text = text[:-3] + "y"
    elif text.endswith("es") and text[:-2].endswith(("ss", "sh", "ch", "x")):
        text = text[:-2]
    elif text.endswith("s") and not text.endswith("ss"):
        text = text[:-1]
    return text


@dataclass(frozen=True)
class KubernetesScope:
    """Namespace allow/deny lists (shell patterns such as `kube-*`) and a kind allow-list.

    An empty allow-list allows everything not denied; an empty kind list
    allows every kind the cluster serves (the service account's RBAC role is
    the other bound). Secrets are refused in every case.
    """

    namespaces_allow: tuple[str, ...] = ()
    namespaces_deny: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    only_namespace: str | None = None  # set per investigation, see confined_to

    def confined_to(self, namespace: str | None) -> KubernetesScope:
        """This scope, bound to the one namespace (and cluster-scoped objects) the
        investigation's caller was authorized for; None: no such bound."""
        return self if namespace is None else replace(self, only_namespace=namespace)

    @classmethod
    def of(
        cls,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        kinds: Iterable[str] = (),
    ) -> KubernetesScope:
        def clean(items: Iterable[str]) -> tuple[str, ...]:
            return tuple(i.strip() for i in items if i and i.strip())

        return cls(clean(allow), clean(deny), clean(kinds))

    def check_kind(self, kind: str) -> None:
        """Before discovery: refuse Secrets and kinds outside the allow-list."""
        key = kind_key(kind)
        if not key:
            raise ScopeRefusal("kind is empty; give a kind such as Pod, Deployment or Node.")
        if key in _ALWAYS_REFUSED:
            raise ScopeRefusal(
                "Secrets are never read by these tools. Look at what references the Secret"
                " (a Pod's env shows secret names and keys) instead."
            )
        if self.kinds and key not in {kind_key(k) for k in self.kinds}:
            raise ScopeRefusal(
                f"kind {kind.strip()[:64]!r} is outside the configured scope; allowed kinds:"
                f" {', '.join(self.kinds)}."
            )

    def check_type(self, rtype: ResourceType) -> None:
        """After discovery: the resolved kind meets the same checks (short names, plurals)."""
        self.check_kind(rtype.kind)

    def check_namespace(self, namespace: str) -> None:
        NamespaceBound(self.namespaces_allow, self.namespaces_deny, self.only_namespace).check(
            namespace
        )

    def allows_namespace(self, namespace: str) -> bool:
        try:
            self.check_namespace(namespace)
        except ScopeRefusal:
            return False
        return True
