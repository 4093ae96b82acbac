"""`CaseWriter`: the thread that writes captured cases, bounded, off the response path.

Investigations hand it jobs through a bounded queue (`offer` never waits: a
full queue drops the job and counts it). The thread renders each case's files
(`CaseJob.files`), skips a case larger than the per-case bound or the
directory's (it would evict every other case and still overflow), removes the
oldest cases until the new one fits the directory's bound, and writes the case
into a hidden directory renamed into place (a reader never sees half a case; a
later investigation of the same remediation replaces it). An outcome job
updates a case already written (`labels.record_outcome`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hapi_grpc.observability.metrics import CAPTURED_CASES

__all__ = ["COUNTS", "CaseWriter", "Files"]

log = logging.getLogger(__name__)

COUNTS = {
    name: CAPTURED_CASES.labels(name)
    for name in ("written", "dropped", "too_large", "evicted", "outcome", "failed")
}
_STOP = object()
Files = dict[str, bytes]


class CaseWriter:
    """Writes cases under `root`, at most `max_case_bytes` each, `max_bytes` in all."""

    def __init__(self, root: Path, *, max_case_bytes: int, max_bytes: int, queue_size: int) -> None:
        self.root = root
        self.max_case_bytes = max_case_bytes
        self.max_bytes = max_bytes
        self._jobs: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        root.mkdir(parents=True, exist_ok=True)
        self._sizes = self._scan()  # case name -> bytes, oldest first
        self._total = sum(self._sizes.values())
        self._thread = threading.Thread(target=self._run, name="capture-writer", daemon=True)
        self._thread.start()

    def offer(self, job: Callable[[], None] | tuple[str, Callable[[], Files]]) -> bool:
        """Queue a case (`(name, render)`: `render()` gives its files) or an update
        (a callable); False when dropped."""
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            COUNTS["dropped"].inc()
            return False
        return True

    @property
    def queue_size(self) -> int:
        return self._jobs.maxsize

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every job queued so far is done (tests, shutdown)."""
        done = threading.Event()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(queue.Full):
                self._jobs.put(done.set, timeout=0.05)
                break
        done.wait(max(deadline - time.monotonic(), 0.0))

    def close(self, timeout: float = 10.0) -> None:
        self.flush(timeout)
        with contextlib.suppress(queue.Full):
            self._jobs.put(_STOP, timeout=1.0)
        self._thread.join(timeout=1.0)

    def _scan(self) -> dict[str, int]:
        found = []
        for case in self.root.iterdir():
            if case.name.startswith("."):
                shutil.rmtree(case, ignore_errors=True)  # a write cut short
            elif case.is_dir():
                size = sum(f.stat().st_size for f in case.rglob("*") if f.is_file())
                found.append((case.stat().st_mtime, case.name, size))
        return {name: size for _, name, size in sorted(found)}

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            try:
                if callable(job):
                    job()
                else:
                    self._write(*job)
            except Exception:  # one case never stops the writer
                COUNTS["failed"].inc()
                log.exception("capturing an investigation failed")

    def _write(self, name: str, render: Callable[[], Files]) -> None:
        files = render()
        size = sum(len(body) for body in files.values())
        if size > min(self.max_case_bytes, self.max_bytes):
            COUNTS["too_large"].inc()
            log.warning("captured case skipped: too large", extra={"bytes": size})
            return
        self._total -= self._sizes.pop(name, 0)
        while self._sizes and self._total + size > self.max_bytes:
            oldest = next(iter(self._sizes))
            shutil.rmtree(self.root / oldest, ignore_errors=True)
            self._total -= self._sizes.pop(oldest)
            COUNTS["evicted"].inc()
        staging = f"{self.root}/.{name}.{os.getpid()}"
        try:
            os.mkdir(staging)
        except FileExistsError:  # left by a write cut short
            shutil.rmtree(staging)
            os.mkdir(staging)
        made = {staging}
        for relative, body in files.items():
            path = f"{staging}/{relative}"
            folder = os.path.dirname(path)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            with open(path, "xb") as out:
                out.write(body)
        final = self.root / name
        try:
            os.rename(staging, final)
        except OSError:  # a case of that name already (a later investigation replaces it)
            shutil.rmtree(final)
            os.rename(staging, final)
        self._sizes[name] = size
        self._total += size
        COUNTS["written"].inc()
