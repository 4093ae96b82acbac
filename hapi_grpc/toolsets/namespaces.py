"""Which namespaces one investigation's tools may read, and the refusal when not.

Design notes: docs/internals.md (`toolsets/namespaces.py`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = ["ANYWHERE", "NamespaceBound", "ScopeRefusal", "cleaned"]


class ScopeRefusal(Exception):
    """A call outside the configured scope; `message` tells the model what it may do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def cleaned(items: Iterable[str]) -> tuple[str, ...]:
    """A settings list without blank items and surrounding spaces."""
    return tuple(i.strip() for i in items if i and i.strip())


@dataclass(frozen=True)
class NamespaceBound:
    """Namespace allow/deny lists (shell patterns such as `kube-*`; an empty allow-list
    allows everything not denied) and the one namespace a confined caller may read."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    only: str | None = None

    @classmethod
    def of(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> NamespaceBound:
        return cls(cleaned(allow), cleaned(deny))

    def confined_to(self, namespace: str | None) -> NamespaceBound:
        """This bound, narrowed to the caller's namespace; None: no such bound."""
        return self if namespace is None else replace(self, only=namespace)

    def check(self, namespace: str) -> None:
        """ScopeRefusal when `namespace` may not be read."""
        if self.only is not None and namespace != self.only:
            raise ScopeRefusal(
                f"this investigation may read only namespace {self.only!r} (the"
                " incident's) and cluster-scoped objects; do not retry another namespace."
            )
        if any(fnmatch.fnmatchcase(namespace, p) for p in self.deny):
            raise ScopeRefusal(
                f"namespace {namespace[:64]!r} is excluded from investigation by configuration;"
                " do not retry it."
            )
        if self.allow and not any(fnmatch.fnmatchcase(namespace, p) for p in self.allow):
            raise ScopeRefusal(
                f"namespace {namespace[:64]!r} is outside the configured scope; allowed:"
                f" {', '.join(self.allow)}."
            )

    def allows(self, namespace: str) -> bool:
        try:
            self.check(namespace)
        except ScopeRefusal:
            return False
        return True


ANYWHERE = NamespaceBound()  # no list, no confined caller
