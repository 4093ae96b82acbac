"""`CaseWriter`: the thread that writes captured cases, bounded, off the response path.

Investigations hand it jobs through a bounded queue (`offer` never waits: a
full queue drops the job and counts it). The thread renders each case as one
record (`(name, render)`: `render()` gives its line of JSON, redacted, and the
`segments.Catalog` it names or None) and appends it to the server's open
segment (`segments.SegmentLog`): one buffered write per case, no file created
for it. A case larger than the per-case bound
or the directory's is skipped; the oldest segments and case directories are
removed until the new record fits the directory's bound. An outcome
(`Outcome`) updates its case's directory when the case was unpacked already
(`labels.record_outcome`), and is appended as a record otherwise.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from hapi_grpc.capture.segments import SEGMENTS, Catalog, SegmentLog
from hapi_grpc.cases import labels
from hapi_grpc.observability.metrics import CAPTURED_CASES

__all__ = ["COUNTS", "CaseWriter", "Outcome"]

log = logging.getLogger(__name__)

COUNTS = {
    name: CAPTURED_CASES.labels(name)
    for name in ("written", "dropped", "too_large", "evicted", "outcome", "failed")
}
_STOP = object()
# A case's record: its line and the catalog record it names (written once a segment).
Render = Callable[[], tuple[bytes, Catalog | None]]
BATCH_SECONDS = 0.05


class Outcome(NamedTuple):
    """A reported outcome for the case `name` (the report as proto JSON, redacted)."""

    name: str
    body: dict[str, Any]
    at: float


class CaseWriter:
    """Writes cases under `root`, at most `max_case_bytes` each, `max_bytes` in all."""

    def __init__(self, root: Path, *, max_case_bytes: int, max_bytes: int, queue_size: int) -> None:
        self.root = root
        self.max_case_bytes = max_case_bytes
        self.max_bytes = max_bytes
        self._jobs: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        root.mkdir(parents=True, exist_ok=True)
        self._log = SegmentLog(root, {"max_case_bytes": max_case_bytes, "max_bytes": max_bytes})
        # What the directory holds, oldest first: case directory or segment -> (bytes, cases).
        self._sizes = self._scan()
        self._total = sum(size for size, _ in self._sizes.values())
        self._thread = threading.Thread(target=self._run, name="capture-writer", daemon=True)
        self._thread.start()

    def offer(self, job: Callable[[], None] | Outcome | tuple[str, Render]) -> bool:
        """Queue a case (`(name, render)`), an `Outcome`, or a callable run on the
        thread; False when dropped."""
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            COUNTS["dropped"].inc()
            return False
        return True

    @property
    def queue_size(self) -> int:
        return self._jobs.maxsize

    def flush(self, timeout: float = 10.0, *, rotate: bool = False) -> None:
        """Wait until every job queued so far is done (tests, shutdown); `rotate`:
        and the open segment closed, ready to unpack."""
        done = threading.Event()

        def mark() -> None:
            if rotate:
                self._rotate()
            done.set()

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(queue.Full):
                self._jobs.put(mark, timeout=0.05)
                break
        done.wait(max(deadline - time.monotonic(), 0.0))

    def close(self, timeout: float = 10.0) -> None:
        self.flush(timeout, rotate=True)
        with contextlib.suppress(queue.Full):
            self._jobs.put(_STOP, timeout=1.0)
        self._thread.join(timeout=1.0)

    def _scan(self) -> dict[str, tuple[int, int]]:
        found = []
        for entry in self.root.iterdir():
            if entry.name == SEGMENTS:
                for segment in entry.glob("*.jsonl"):
                    body = segment.read_bytes()
                    records = body.count(b'\n{"name"')  # cases and outcomes
                    found.append((segment.stat().st_mtime, f"{SEGMENTS}/{segment.name}",
                                  (len(body), records)))  # fmt: skip
            elif entry.name.startswith("."):
                shutil.rmtree(entry, ignore_errors=True)  # a write cut short
            elif entry.is_dir():
                size = sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
                found.append((entry.stat().st_mtime, entry.name, (size, 1)))
        return {name: size for _, name, size in sorted(found)}

    def _run(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._log.seconds_left())
            except queue.Empty:
                self._guarded(self._rotate)
                continue
            # Woken once for a batch, not for each case: under load the thread takes
            # the interpreter from the event loop a few times a second, not per answer.
            time.sleep(BATCH_SECONDS)
            while True:
                if job is _STOP:
                    return
                self._do(job)
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break

    def _do(self, job: Any) -> None:
        if isinstance(job, Outcome):
            self._guarded(lambda: self._outcome(job))
        elif callable(job):
            self._guarded(job)
        else:
            self._guarded(lambda: self._write(*job))
        if self._log.due(self.max_bytes // 8):
            self._guarded(self._rotate)

    def _guarded(self, work: Callable[[], Any]) -> None:
        try:
            work()
        except Exception:  # one case never stops the writer
            COUNTS["failed"].inc()
            log.exception("capturing an investigation failed")

    def _rotate(self) -> None:
        closed = self._log.rotate()
        if closed is None:
            return
        path, size, records = closed
        self._sizes[f"{SEGMENTS}/{os.path.basename(path)}"] = (size, records)
        segments = [k for k in self._sizes if k.startswith(SEGMENTS)]
        if any(not (self.root / k).exists() for k in segments):  # unpacked meanwhile
            self._sizes = self._scan()
            self._total = sum(size for size, _ in self._sizes.values())

    def _append(self, line: bytes, catalog: Catalog | None = None) -> bool:
        size = len(line) + (len(catalog.record) if catalog is not None else 0)
        if size > min(self.max_case_bytes, self.max_bytes):
            COUNTS["too_large"].inc()
            log.warning("captured case skipped: too large", extra={"bytes": size})
            return False
        while self._total + size > self.max_bytes:
            if not self._sizes:
                if self._log.seconds_left() is None:
                    break
                self._rotate()  # only the open segment is left: closed, then removed
                continue
            oldest = next(iter(self._sizes))
            removed, count = self._sizes.pop(oldest)
            path = self.root / oldest
            if oldest.startswith(SEGMENTS):
                path.unlink(missing_ok=True)
            else:
                shutil.rmtree(path, ignore_errors=True)
            self._total -= removed
            COUNTS["evicted"].inc(count)
        before = self._log.bytes
        self._log.append(line, catalog)
        self._total += self._log.bytes - before
        return True

    def _write(self, name: str, render: Render) -> None:
        if self._append(*render()):
            COUNTS["written"].inc()

    def _outcome(self, job: Outcome) -> None:
        directory = self.root / job.name
        if (directory / "case.yaml").exists():
            labels.record_outcome(directory, job.body, _utc(job.at))
        else:
            record = {"name": job.name, "at": job.at, "outcome": job.body}
            self._append(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        COUNTS["outcome"].inc()


def _utc(at: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC)
