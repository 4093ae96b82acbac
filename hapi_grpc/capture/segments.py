"""Segment files: captured cases as records, one line of JSON each, appended.

The server appends to `.segments/<start>-<pid>.jsonl.open` of the capture
directory through one buffered handle, and closes it (renamed to `.jsonl`)
after `SEGMENT_RECORDS` records, `SEGMENT_SECONDS` after its first one, when
it has `max_bytes / 8` bytes, and at shutdown. A record is either a case
(`{"name", "at", "case"}`: the case's content, already redacted) or an outcome
(`{"name", "at", "outcome"}`); the first line of a segment names the bounds it
was written under. The workflows a case was offered are written once per
segment (`{"catalog_ref", "catalog"}`, before the first case that names them by
its `catalog_ref`): a storm's cases are offered the same few. `hapi-grpc cases
unpack` (`unpack.py`) turns closed segments into case directories.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from hapi_grpc.domain import bounded_json

__all__ = [
    "OPEN",
    "SEGMENTS",
    "SEGMENT_RECORDS",
    "SEGMENT_SECONDS",
    "Catalog",
    "SegmentLog",
    "closed_segments",
    "process_alive",
    "read_records",
]

SEGMENTS = ".segments"
OPEN = ".open"
SEGMENT_RECORDS = 1000
SEGMENT_SECONDS = 2.0


class Catalog(NamedTuple):
    """The workflows of cases, as the record written once per segment (`record`,
    `{"catalog_ref": ref, "catalog": [...]}` and a newline)."""

    ref: str
    record: bytes


# The longest record line read back: far past the largest case the writer keeps.
MAX_RECORD_BYTES = 256 * 1024 * 1024


def closed_segments(root: Path) -> list[Path]:
    """The closed segments of a capture directory, oldest first."""
    folder = root / SEGMENTS
    if not folder.is_dir():
        return []
    return sorted(folder.glob("*.jsonl"))


def read_records(path: Path, max_bytes: int = MAX_RECORD_BYTES) -> Iterator[dict[str, Any]]:
    """The records of a segment: a line cut short by a crash, longer than `max_bytes`
    or nested deeper than the shared JSON bound is skipped (a segment is a file on
    disk anyone with access to the directory could have changed)."""
    with path.open("rb") as lines:
        while line := lines.readline(max_bytes + 1):
            if not line.endswith(b"\n"):
                if len(line) <= max_bytes:
                    return  # the last line, cut short
                while (rest := lines.readline(max_bytes)) and not rest.endswith(b"\n"):
                    pass  # the rest of an overlong line
                continue
            with contextlib.suppress(ValueError):
                record = bounded_json.loads(line, max_bytes=max_bytes)
                if isinstance(record, dict):
                    yield record


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class SegmentLog:
    """The open segment of one server (writer thread only)."""

    def __init__(self, root: Path, header: dict[str, Any]) -> None:
        self.folder = root / SEGMENTS
        self.folder.mkdir(parents=True, exist_ok=True)
        self._header = (json.dumps({"segment": 1, **header}) + "\n").encode()
        self._out: IO[bytes] | None = None
        self._path = ""
        self._records = 0
        self._catalogs: set[str] = set()  # the catalog refs this segment holds
        self.opened = 0.0
        self.bytes = 0
        self._close_left_open()

    def _close_left_open(self) -> None:
        """Segments a stopped server left open are closed (their whole lines are read)."""
        for path in self.folder.glob(f"*.jsonl{OPEN}"):
            pid = path.name.split(".")[0].rpartition("-")[2]
            if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.rename(path, str(path).removesuffix(OPEN))

    def append(self, line: bytes, catalog: Catalog | None = None) -> None:
        """`line`, after `catalog`'s record when this segment does not hold it yet."""
        if self._out is None:
            self.opened = time.monotonic()
            self._path = f"{self.folder}/{time.time_ns()}-{os.getpid()}.jsonl{OPEN}"
            self._out = open(self._path, "xb", buffering=1 << 20)
            self._out.write(self._header)
            self.bytes = len(self._header)
        if catalog is not None and catalog.ref not in self._catalogs:
            self._catalogs.add(catalog.ref)
            self._out.write(catalog.record)
            self.bytes += len(catalog.record)
        self._out.write(line)
        self.bytes += len(line)
        self._records += 1

    def due(self, max_bytes: int) -> bool:
        """Time to close it: records, age or bytes past the bounds."""
        return self._out is not None and (
            self._records >= SEGMENT_RECORDS
            or self.bytes >= max_bytes
            or time.monotonic() - self.opened >= SEGMENT_SECONDS
        )

    def seconds_left(self) -> float | None:
        if self._out is None:
            return None
        return max(SEGMENT_SECONDS - (time.monotonic() - self.opened), 0.0)

    def rotate(self) -> tuple[str, int, int] | None:
        """Closes the segment: (its closed path, bytes, records); None when none is open."""
        if self._out is None:
            return None
        self._out.close()
        self._out = None
        closed = self._path.removesuffix(OPEN)
        os.rename(self._path, closed)
        done = (closed, self.bytes, self._records)
        self._records = 0
        self._catalogs.clear()
        self.bytes = 0
        return done
