"""What the `kubernetes` tools may read: namespaces, kinds, and never Secrets.

Every check here runs before any request is made. A refusal is an
actionable message for the model (what is allowed instead), not an error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from hapi_grpc.toolsets.namespaces import ANYWHERE, NamespaceBound, ScopeRefusal, cleaned

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
    """The namespaces the tools may read (`NamespaceBound`) and a kind allow-list.

    An empty kind list allows every kind the cluster serves (the service
    account's RBAC role is the other bound). Secrets are refused in every case.
    """

    namespaces: NamespaceBound = ANYWHERE
    kinds: tuple[str, ...] = ()

    def confined_to(self, namespace: str | None) -> KubernetesScope:
        """This scope, bound to the one namespace (and cluster-scoped objects) the
        investigation's caller was authorized for; None: no such bound."""
        if namespace is None:
            return self
        return replace(self, namespaces=self.namespaces.confined_to(namespace))

    @classmethod
    def of(
        cls,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        kinds: Iterable[str] = (),
    ) -> KubernetesScope:
        return cls(NamespaceBound.of(allow, deny), cleaned(kinds))

    def check_kind(self, kind: str) -> None:
        """Refuse Secrets and kinds outside the allow-list: before discovery, and after it
        for the resolved kind (short names, plurals)."""
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
