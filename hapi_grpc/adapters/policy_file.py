"""The operator's policy file (`HAPI_POLICY_FILE`): loaded at start, reloaded on change.

`PolicyFile.load` reads and checks the file; a mistake raises `PolicyError`
with one line naming the rule, and the server does not start. Afterwards
`current()` looks at the file's identity (inode, size, modification time) at
most once per `check_interval` seconds, which also follows a Kubernetes
ConfigMap's atomic symlink swap, and loads it again when it changed. A change
that does not load keeps the last good policy and logs one line; it is not
tried again until the file changes once more.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable

import yaml

from hapi_grpc.domain.policy.rules import Policy, PolicyError, parse_policy

__all__ = ["PolicyFile", "read_policy"]

logger = logging.getLogger(__name__)

MAX_POLICY_BYTES = 1 << 20
_Signature = tuple[int, int, int, int] | None  # None: the file could not be read


def read_policy(path: str) -> Policy:
    """The policy in `path`; PolicyError (one line) when it cannot be used."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_POLICY_BYTES + 1)
    except OSError as exc:
        raise PolicyError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(f"{path} is larger than {MAX_POLICY_BYTES} bytes")
    try:
        document = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PolicyError(f"{path} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise PolicyError(f"{path} is not valid YAML{where}") from None
    return parse_policy(document)


def _signature(path: str) -> _Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class PolicyFile:
    """The policy of one file, kept current (a `PolicySource`)."""

    def __init__(
        self,
        path: str,
        policy: Policy,
        signature: _Signature,
        *,
        check_interval: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._policy = policy
        self._signature = signature
        self._interval = check_interval
        self._clock = clock
        self._next_check = clock() + check_interval

    @classmethod
    def load(cls, path: str, *, check_interval: float = 2.0) -> PolicyFile:
        """Read `path` now; PolicyError when it cannot be used."""
        signature = _signature(path)
        return cls(path, read_policy(path), signature, check_interval=check_interval)

    @property
    def policy(self) -> Policy:
        return self._policy

    async def current(self) -> Policy:
        """The policy in force, reloaded first when the file changed (checked on an interval)."""
        now = self._clock()
        if now >= self._next_check:
            self._next_check = now + self._interval  # one check at a time
            await asyncio.to_thread(self.reload_if_changed)
        return self._policy

    def reload_if_changed(self) -> bool:
        """Load the file again if it changed; True when a new policy is in force."""
        signature = _signature(self.path)
        if signature == self._signature:
            return False
        self._signature = signature
        try:
            policy = read_policy(self.path)
        except PolicyError as exc:
            logger.warning("policy file not reloaded, the last good policy stays in force: %s", exc)
            return False
        self._policy = policy
        logger.info("policy file reloaded path=%s rules=%d", self.path, len(policy.rules))
        return True
