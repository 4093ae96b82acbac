"""Closed segments unpacked into case directories (`hapi-grpc cases unpack DIR`).

`hapi-grpc cases review` and `hapi-grpc eval --cases-dir` run it first. Each
closed segment of DIR (`segments.closed_segments`, oldest first) is claimed
(renamed, so two commands never unpack one twice), its records applied in
order: a case is written as today's directory (YAML, a hidden directory
renamed into place; a later case of the same name replaces it), an outcome
updates the case's directory (`labels.record_outcome`) — and the segment is
removed. The bounds the server wrote it under hold for the files: a case over
`max_case_bytes` is skipped, and the oldest cases are removed until DIR holds
at most `max_bytes`.
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

from hapi_grpc.capture.segments import closed_segments, read_records
from hapi_grpc.cases import labels

__all__ = ["Unpacked", "case_files", "unpack"]

log = logging.getLogger(__name__)


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
    catalogs: dict[Any, Any],
    done: Unpacked,
) -> None:
    name = record.get("name")
    if not _safe(name):
        return
    if isinstance(record.get("case"), dict):
        catalog = record.get("catalog") or catalogs.get(record.get("catalog_ref"))
        files = case_files(record["case"], catalog if isinstance(catalog, list) else None)
        if sum(len(b) for b in files.values()) > int(bounds.get("max_case_bytes") or 1 << 62):
            done.too_large += 1
            return
        _write(root, name, files)
        done.cases += 1
    elif isinstance(record.get("outcome"), dict) and (root / name / "case.yaml").is_file():
        at = datetime.fromtimestamp(float(record.get("at") or 0), UTC)
        labels.record_outcome(root / name, record["outcome"], at)
        done.outcomes += 1


def unpack(root: Path) -> Unpacked:
    """Every closed segment of `root` unpacked into case directories, then removed."""
    done = Unpacked()
    for segment in closed_segments(root):
        claimed = segment.with_name(f"{segment.name}.unpacking-{os.getpid()}")
        try:
            os.rename(segment, claimed)
        except FileNotFoundError:  # another command took it
            continue
        bounds: dict[str, Any] = {}
        catalogs: dict[Any, Any] = {}  # catalog_ref -> the workflows, for this segment
        for record in read_records(claimed):
            if "segment" in record:
                bounds = record
            elif "catalog_ref" in record and "name" not in record:
                catalogs[record["catalog_ref"]] = record.get("catalog")
            else:
                try:
                    _apply(root, record, bounds, catalogs, done)
                except (OSError, ValueError) as exc:  # one record never stops the others
                    done.failed += 1
                    log.warning("captured record not unpacked: %s", exc)
        if bounds.get("max_bytes"):
            _evict(root, int(bounds["max_bytes"]), done)
        claimed.unlink()
    return done
