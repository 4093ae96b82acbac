"""Closed segments unpacked into case directories (`hapi-grpc cases unpack DIR`).

`hapi-grpc cases review` and `hapi-grpc eval --cases-dir` run it first. Each
closed segment of DIR (`segments.closed_segments`, oldest first) is claimed
(renamed, so two commands never unpack one twice), its records applied in
order: a case is written as today's directory (YAML, a hidden directory
renamed into place; a later case of the same name replaces it), an outcome
updates the case's directory (`labels.record_outcome`) — and the segment is
removed. The bounds the server wrote it under hold for the files: a case over
`max_case_bytes` is skipped, and the oldest cases are removed until DIR holds
at most `max_bytes`. A segment claimed by an unpack that stopped part way (its
process gone) is claimed by the next one, which writes the cases not written
yet, with their outcomes; a case already written stays as it is (outcomes may
have joined it since).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

from hapi_grpc.capture.segments import SEGMENTS, closed_segments, process_alive, read_records
from hapi_grpc.cases import labels

__all__ = ["Unpacked", "case_files", "unpack"]

log = logging.getLogger(__name__)

CLAIMED = ".unpacking-"  # a segment being unpacked: `<segment>.jsonl.unpacking-<pid>`


@dataclass
class Unpacked:
    cases: int = 0
    outcomes: int = 0
    too_large: int = 0
    evicted: int = 0
    failed: int = 0


def case_files(case: dict[str, Any], catalog: list[Any] | None) -> dict[str, bytes]:
    """A case record's files, as the case format lays them out."""
    files: dict[str, str] = {
        "request.json": json.dumps(case.get("request") or {}, indent=2, ensure_ascii=False),
        "cluster.yaml": labels.dump_yaml(case.get("objects") or [], documents=True),
        **(case.get("logs") or {}),
        **{
            f"node_stats/{node}.json": json.dumps(summary, ensure_ascii=False)
            for node, summary in (case.get("node_stats") or {}).items()
        },
        "metrics.om": case.get("metrics") or "",
        "alerts.yaml": labels.dump_yaml(case["alerts"]) if case.get("alerts") else "",
        "history.yaml": labels.dump_yaml(case["history"]) if case.get("history") else "",
        "catalog.yaml": labels.dump_yaml({"workflows": catalog}) if catalog else "",
    }
    files |= labels.captured_texts(
        description=str(case.get("description") or ""),
        captured=case.get("captured") or {},
        expected=case.get("expected") or {},
        catalog="catalog.yaml" if catalog else None,
    )
    return {path: text.encode() for path, text in files.items() if text}


def _safe(name: Any) -> TypeGuard[str]:
    return isinstance(name, str) and bool(name) and name == Path(name).name and name[0] != "."


def _size(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())


def _write(root: Path, name: str, files: dict[str, bytes]) -> None:
    staging = root / f".{name}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    for relative, body in files.items():
        if ".." in Path(relative).parts or Path(relative).is_absolute():
            continue  # a path out of the case: never written
        path = staging / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    final = root / name
    try:
        os.rename(staging, final)
    except OSError:  # a case of that name already: replaced
        shutil.rmtree(final)
        os.rename(staging, final)


def _evict(root: Path, max_bytes: int, done: Unpacked) -> None:
    cases = sorted(
        (d.stat().st_mtime, d.name, _size(d))
        for d in root.iterdir()
        if d.is_dir() and not d.name.startswith(".")
    )
    total = sum(size for _, _, size in cases)
    for _, name, size in cases:
        if total <= max_bytes:
            return
        shutil.rmtree(root / name, ignore_errors=True)
        total -= size
        done.evicted += 1


def _apply(
    root: Path,
    record: dict[str, Any],
    bounds: dict[str, Any],
    catalogs: dict[str, Any],
    done: Unpacked,
    recovered: set[str] | None,
) -> None:
    name = record.get("name")
    if not _safe(name):
        return
    if isinstance(record.get("case"), dict):
        if recovered is not None:
            if (root / name).exists():
                return  # written by the unpack that stopped; outcomes may have joined it
            recovered.add(name)
        ref = record.get("catalog_ref")
        catalog = record.get("catalog") or (catalogs.get(ref) if isinstance(ref, str) else None)
        files = case_files(record["case"], catalog if isinstance(catalog, list) else None)
        if sum(len(b) for b in files.values()) > int(bounds.get("max_case_bytes") or 1 << 62):
            done.too_large += 1
            return
        _write(root, name, files)
        done.cases += 1
    elif isinstance(record.get("outcome"), dict) and (root / name / "case.yaml").is_file():
        if recovered is not None and name not in recovered:
            return  # applied by the unpack that stopped, or newer ones since
        at = datetime.fromtimestamp(float(record.get("at") or 0), UTC)
        labels.record_outcome(root / name, record["outcome"], at)
        done.outcomes += 1


def _unpack_segment(root: Path, claimed: Path, done: Unpacked, *, recovering: bool) -> None:
    """A claimed segment's records applied in order, then the segment removed.
    `recovering`: an unpack that stopped had claimed it, and may have applied some."""
    bounds: dict[str, Any] = {}
    catalogs: dict[str, Any] = {}  # catalog_ref -> the workflows, for this segment
    recovered: set[str] | None = set() if recovering else None
    for record in read_records(claimed):
        if "segment" in record:
            bounds = record
        elif "catalog_ref" in record and "name" not in record:
            if isinstance(record["catalog_ref"], str):  # the file may have been changed
                catalogs[record["catalog_ref"]] = record.get("catalog")
        else:
            try:
                _apply(root, record, bounds, catalogs, done, recovered)
            except (OSError, ValueError) as exc:  # one record never stops the others
                done.failed += 1
                log.warning("captured record not unpacked: %s", exc)
    if bounds.get("max_bytes"):
        _evict(root, int(bounds["max_bytes"]), done)
    claimed.unlink()


def _left_claimed(root: Path) -> list[Path]:
    """Segments claimed by an unpack whose process is gone (stopped part way)."""
    folder = root / SEGMENTS
    found = sorted(folder.glob(f"*.jsonl{CLAIMED}*")) if folder.is_dir() else []
    return [
        path
        for path in found
        if (pid := path.name.rpartition("-")[2]).isdigit()
        and int(pid) != os.getpid()
        and not process_alive(int(pid))
    ]


def unpack(root: Path) -> Unpacked:
    """Every closed segment of `root` unpacked into case directories, then removed;
    first the segments an unpack that stopped had claimed (what it did not write)."""
    done = Unpacked()
    left = [(path, True) for path in _left_claimed(root)]
    for segment, recovering in [*left, *((s, False) for s in closed_segments(root))]:
        closed_name = segment.name.partition(CLAIMED)[0]
        claimed = segment.with_name(f"{closed_name}{CLAIMED}{os.getpid()}")
        try:
            os.rename(segment, claimed)
        except FileNotFoundError:  # another command took it
            continue
        _unpack_segment(root, claimed, done, recovering=recovering)
    return done
