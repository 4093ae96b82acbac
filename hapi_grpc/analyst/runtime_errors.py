"""What the kubelet and the container runtimes say when an image or a container fails.

Design notes: docs/internals.md (`analyst/runtime_errors.py`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, TypeVar

import re2

__all__ = [
    "NOTE_LENGTH_LIMIT",
    "PullFailure",
    "StartFailure",
    "missing_object",
    "pull_failure",
    "start_failure",
]

NOTE_LENGTH_LIMIT = 1024


class PullFailure(enum.StrEnum):
    """Why an image pull failed."""

    NOT_FOUND = "the image or tag does not exist in the registry"
    UNAUTHORIZED = "the registry refused the credentials (or had none)"
    UNREACHABLE = "the registry could not be reached"
    RATE_LIMITED = "the registry rate-limited the pull"
    PLATFORM = "the image has no variant for the node's platform"
    INVALID_NAME = "the image reference is malformed"
    UNKNOWN = "the runtime's message does not say why"


class StartFailure(enum.StrEnum):
    """Why a container could not be created or started."""

    MISSING_OBJECT = "a ConfigMap, Secret or key the container references does not exist"
    COMMAND_NOT_FOUND = "the command does not exist in the image"
    WRONG_PLATFORM = "the image's binaries are for another platform"
    PERMISSION = "the runtime was denied permission"
    UNKNOWN = "the runtime's message does not say why"


# First match wins; the order puts the specific before the generic (a 404 from the
# token endpoint is an auth failure, not a missing image).
_PULL: tuple[tuple[PullFailure, str], ...] = (
    (PullFailure.INVALID_NAME, r"(?i)invalid reference format|InvalidImageName"),
    (PullFailure.RATE_LIMITED, r"(?i)toomanyrequests|429 Too Many Requests"),
    (
        PullFailure.UNAUTHORIZED,
        r"(?i)failed to authorize|failed to fetch (?:anonymous|oauth) token"
        r"|\b401 Unauthorized|\b403 Forbidden|unauthorized: authentication required"
        r"|requested access to the resource is denied|no basic auth credentials"
        r"|code = (?:Unauthenticated|PermissionDenied)",
    ),
    # containerd reports a missing platform variant as NotFound: the reference exists,
    # the node's architecture does not fit it.
    (PullFailure.PLATFORM, r"(?i)no match for platform in manifest|no matching manifest for"),
    (
        PullFailure.NOT_FOUND,
        r"(?i)code = NotFound|manifest unknown|name unknown|repository name not known"
        r"|manifest for \S{1,300} not found|failed to resolve reference \"[^\"]{1,300}\": "
        r"[^\s:]{1,300}: not found|: not found$",
    ),
    (
        PullFailure.UNREACHABLE,
        r"(?i)dial tcp|i/o timeout|connection refused|no such host|TLS handshake timeout"
        r"|x509: |tls: failed to verify|context deadline exceeded|\b50[234] [A-Z]"
        r"|error pinging (?:docker )?registry",
    ),
)
_START: tuple[tuple[StartFailure, str], ...] = (
    (
        StartFailure.MISSING_OBJECT,
        r"(?i)\b(?:configmaps?|secrets?) \"[^\"]{1,253}\" not found"
        r"|couldn't find key \S{1,253} in (?:ConfigMap|Secret)",
    ),
    (
        StartFailure.COMMAND_NOT_FOUND,
        r"(?i)executable file not found|exec: \"[^\"]{1,500}\": stat [^:]{1,500}: no such file"
        r"|no such file or directory: unknown",
    ),
    (StartFailure.WRONG_PLATFORM, r"(?i)exec format error"),
    (StartFailure.PERMISSION, r"(?i)permission denied"),
)
_MISSING = re2.compile(
    r"(?i)\b(?P<kind>configmap|secret)s? \"(?P<name>[a-z0-9][-a-z0-9.]{0,252})\" not found"
    r"|couldn't find key \S{1,253} in (?P<kind2>ConfigMap|Secret)"
    r" (?:[a-z0-9][-a-z0-9]{0,62}/)?(?P<name2>[a-z0-9][-a-z0-9.]{0,252})"
)
_T = TypeVar("_T")
_COMPILED_PULL = tuple((label, re2.compile(p)) for label, p in _PULL)
_COMPILED_START = tuple((label, re2.compile(p)) for label, p in _START)


def _first(patterns: Iterable[tuple[_T, Any]], texts: Iterable[str], default: _T) -> _T:
    for text in texts:
        head = text[:NOTE_LENGTH_LIMIT]
        for label, pattern in patterns:
            if pattern.search(head):
                return label
    return default


def pull_failure(texts: Iterable[str]) -> PullFailure:
    """The class the first telling text shows (event messages, a waiting state's message)."""
    return _first(_COMPILED_PULL, texts, PullFailure.UNKNOWN)


def start_failure(texts: Iterable[str]) -> StartFailure:
    """The class of a container that could not be created or started."""
    return _first(_COMPILED_START, texts, StartFailure.UNKNOWN)


def missing_object(texts: Iterable[str]) -> tuple[str, str] | None:
    """(kind, name) of the ConfigMap or Secret a text says is missing; None when none."""
    for text in texts:
        match = _MISSING.search(text[:NOTE_LENGTH_LIMIT])
        if match is None:
            continue
        kind = match.group("kind") or match.group("kind2") or ""
        name = match.group("name") or match.group("name2") or ""
        return ("ConfigMap" if kind.lower() == "configmap" else "Secret"), name
    return None
