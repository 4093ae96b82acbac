"""The operator's files: the policy (`HAPI_POLICY_FILE`), loaded at start and reloaded
on change, and the premises (`HAPI_PREMISES_FILE`), read and checked at start.

Design notes: docs/internals.md (`adapters/operator_files.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
import time
from collections.abc import Callable

import yaml

from hapi_grpc.domain import bounded_yaml
from hapi_grpc.domain.policy.rules import Policy, PolicyError, parse_policy
from hapi_grpc.domain.premises import PackError, PremiseBook, bundled_book, parse_operator
from hapi_grpc.domain.premises.bundled import role_table

__all__ = ["PolicyFile", "read_policy", "read_premises"]

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 1 << 20  # each of them
RELOAD_WAIT = 0.5  # seconds a decision waits for a reload it started
_Signature = tuple[int, int, int, int] | None  # None: the file could not be read


def _read(path: str, error: type[Exception], limit: int = MAX_FILE_BYTES) -> bytes:
    """At most `limit` + 1 bytes of the regular file at `path`, else `error` (one line);
    opening does not wait (O_NONBLOCK: a FIFO without a writer opens at once, then is
    refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path} is not a regular file")
        if info.st_size > limit:
            raise error(f"{path} is larger than {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise error(f"{path} is larger than {limit} bytes")
    return raw


def read_policy(path: str) -> Policy:
    """The policy in `path`; PolicyError (one line) when it cannot be used."""
    raw = _read(path, PolicyError)
    try:
        document = bounded_yaml.load(raw.decode("utf-8"), aliases=False)
    except UnicodeDecodeError:
        raise PolicyError(f"{path} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        if "aliases are not allowed" in str(exc):
            raise PolicyError(f"{path}: YAML aliases are not allowed{where}") from None
        if "nested deeper" in str(exc):
            raise PolicyError(f"{path}: YAML {exc.problem}{where}") from None
        raise PolicyError(f"{path} is not valid YAML{where}") from None
    return parse_policy(document)


def read_premises(path: str) -> PremiseBook:
    """The shipped packs overlaid by the file at `path`; PackError (one line) if unusable."""
    raw = _read(path, PackError)
    try:
        document = bounded_yaml.load(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PackError(f"{path} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        what = f" ({problem})" if problem else ""
        raise PackError(f"{path} is not valid YAML{where}{what}") from None
    return bundled_book(parse_operator(document, path, role_table()))


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
        self._reloading: asyncio.Future[bool] | None = None

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
        if self._reloading is not None and self._reloading.done():
            self._reloading = None
        if now >= self._next_check and self._reloading is None:
            self._next_check = now + self._interval  # one check at a time
            self._reloading = _in_daemon_thread(self.reload_if_changed)
            try:
                await asyncio.wait_for(asyncio.shield(self._reloading), RELOAD_WAIT)
            except TimeoutError:
                logger.warning("policy file still being read; the policy in force decides")
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


def _in_daemon_thread(work: Callable[[], bool]) -> asyncio.Future[bool]:
    """`work()` in a daemon thread (never joined at exit), as a future of this loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bool] = loop.create_future()

    def settle(result: bool | None, error: BaseException | None) -> None:
        if not future.done():
            future.set_exception(error) if error else future.set_result(bool(result))

    def run() -> None:
        result, error = None, None
        try:
            result = work()
        except BaseException as exc:  # handed to the loop, not lost in the thread
            error = exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:
            pass  # the loop closed meanwhile: nobody waits any more

    threading.Thread(target=run, name="policy-reload", daemon=True).start()
    return future
