"""`hapi-grpc cases unpack`: the records a writer closed become case directories,
later records over earlier ones, within the bounds they were written under."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from hapi_grpc.capture.segments import Catalog, closed_segments, read_records
from hapi_grpc.capture.writer import CaseWriter, Outcome
from hapi_grpc.cases import review
from hapi_grpc.cases.case import load_case

AT = "2026-01-02T03:04:05Z"


def case(description: str, logs: int = 1) -> dict[str, Any]:
    return {
        "description": description,
        "captured": {"at": AT, "remediation_id": "rr-1", "decision": {}},
        "expected": {"unreviewed": True, "review": {"reasons": []},
                     "label": {"source": "capture", "at": AT}},
        "request": {"incident": {"remediationId": "rr-1"}},
        "objects": [{"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "api", "namespace": "payments"}}],
        "logs": {"logs/payments/api/app.log": "line\n" * logs},
    }  # fmt: skip


def line(name: str, body: dict[str, Any]) -> bytes:
    return (json.dumps({"name": name, "at": 1.0, "case": body}) + "\n").encode()


def rendered(name: str, body: dict[str, Any]) -> tuple[bytes, None]:
    """What `render()` gives for a case offered no workflows."""
    return line(name, body), None


def test_closed_segments_become_cases_the_latest_record_of_a_name_winning(
    tmp_path: Path, capsys: Any
) -> None:
    root = tmp_path / "captured"
    writer = CaseWriter(root, max_case_bytes=1 << 20, max_bytes=1 << 30, queue_size=16)
    writer.offer(("rr-1-a", lambda: rendered("rr-1-a", case("first"))))
    writer.offer(Outcome("rr-9-gone", {"remediationId": "rr-9"}, 1.0))  # no case: dropped
    writer.flush(rotate=True)
    writer.offer(("rr-1-a", lambda: rendered("rr-1-a", case("second"))))
    writer.offer(("../escape", lambda: rendered("../escape", case("out of the directory"))))
    writer.close()
    segments = closed_segments(root)
    assert len(segments) == 2
    with segments[1].open("ab") as out:
        out.write(b'{"name": "rr-3-c", "case": {"descr')  # cut short by a crash
    # A segment written under a bound of 4 KiB a case: rr-2-b's files exceed it.
    header = json.dumps({"segment": 1, "max_case_bytes": 4096, "max_bytes": 1 << 30})
    (root / ".segments" / "9999999999999999999-1.jsonl").write_bytes(
        header.encode() + b"\n" + line("rr-2-b", case("too large", 2000))
    )

    assert review.main(["unpack", str(root)]) == 0
    assert not closed_segments(root)
    cases = sorted(d.name for d in root.iterdir() if not d.name.startswith("."))
    assert cases == ["rr-1-a"]
    unpacked = load_case(root / "rr-1-a")
    assert unpacked.meta.description == "second" and unpacked.expected.unreviewed
    assert [o["kind"] for o in unpacked.objects] == ["Pod"]
    assert "1 too large" in capsys.readouterr().err
    assert not (tmp_path / "escape").exists()


def test_an_overlong_or_too_deep_record_is_skipped_and_the_rest_read(tmp_path: Path) -> None:
    """A segment is a file on disk: a line past the record bound, or nested past the
    shared JSON depth, is skipped without reading it whole or recursing into it."""
    segment = tmp_path / "s.jsonl"
    deep = b"[" * 5000 + b"]" * 5000 + b"\n"
    overlong = b'{"name": "' + b"x" * 5000 + b'"}\n'
    segment.write_bytes(deep + overlong + line("rr-1-a", case("kept")))
    records = list(read_records(segment, max_bytes=4096))
    assert [r["name"] for r in records] == ["rr-1-a"]


def test_the_workflows_cases_were_offered_are_written_once_a_segment(tmp_path: Path) -> None:
    """A storm's cases are offered the same workflows: one catalog record per segment
    serves them all, and each unpacked case has its own catalog file."""
    root = tmp_path / "captured"
    workflows = [{"workflow_id": "wf-1", "version": "1.0.0", "title": "one"}]
    text = json.dumps({"catalog_ref": "c1", "catalog": workflows})
    catalog = Catalog("c1", text.encode() + b"\n")

    def offered(name: str) -> tuple[bytes, Catalog]:
        record = {"name": name, "at": 1.0, "case": case(name), "catalog_ref": "c1"}
        return (json.dumps(record) + "\n").encode(), catalog

    writer = CaseWriter(root, max_case_bytes=1 << 20, max_bytes=1 << 30, queue_size=16)
    for name in ("rr-1-a", "rr-2-b"):
        writer.offer((name, lambda name=name: offered(name)))
    writer.flush(rotate=True)
    writer.offer(("rr-3-c", lambda: offered("rr-3-c")))
    writer.close()
    per_segment = [
        [r.get("catalog_ref") for r in read_records(s) if "catalog" in r]
        for s in closed_segments(root)
    ]
    assert per_segment == [["c1"], ["c1"]]

    assert review.main(["unpack", str(root)]) == 0
    for name in ("rr-1-a", "rr-2-b", "rr-3-c"):
        unpacked = load_case(root / name)
        assert unpacked.catalog_file is not None
        assert "wf-1" in unpacked.catalog_file.read_text()


def test_a_segment_left_claimed_by_an_unpack_that_stopped_is_finished_by_the_next(
    tmp_path: Path,
) -> None:
    """What the stopped unpack wrote stays (with the outcome that joined it since);
    what it did not write is written; a segment a live unpack holds is left to it."""
    root = tmp_path / "captured"
    writer = CaseWriter(root, max_case_bytes=1 << 20, max_bytes=1 << 30, queue_size=16)
    writer.offer(("rr-1-a", lambda: rendered("rr-1-a", case("first"))))
    writer.offer(("rr-2-b", lambda: rendered("rr-2-b", case("second"))))
    writer.offer(Outcome("rr-2-b", {"remediationId": "rr-2", "attempt": 1, "succeeded": {}}, 2.0))
    writer.close()
    (segment,) = closed_segments(root)
    gone = subprocess.Popen(["true"])  # a process that has ended: its pid
    gone.wait()
    claimed = segment.with_name(f"{segment.name}.unpacking-{gone.pid}")
    segment.rename(claimed)
    held = segment.with_name(f"9{segment.name}.unpacking-1")  # pid 1 is alive
    held.write_bytes(claimed.read_bytes())
    # The stopped unpack had written rr-1-a, and an outcome joined it afterwards.
    (root / "rr-1-a").mkdir()
    (root / "rr-1-a" / "marker").write_text("written before")

    assert review.main(["unpack", str(root)]) == 0
    assert not claimed.exists() and held.exists()
    assert (root / "rr-1-a" / "marker").read_text() == "written before"
    unpacked = load_case(root / "rr-2-b")
    assert unpacked.meta.description == "second"
    assert unpacked.meta.captured is not None and unpacked.meta.captured.outcome is not None
    assert unpacked.meta.captured.outcome["remediationId"] == "rr-2"


def test_a_catalog_ref_that_is_not_text_is_ignored_not_fatal(tmp_path: Path) -> None:
    """A segment is a file anyone with access could have changed: a reference that is
    a list or an object names no catalog, and the cases are still unpacked."""
    root = tmp_path / "captured"
    header = json.dumps({"segment": 1, "max_case_bytes": 1 << 20, "max_bytes": 1 << 30})
    bad_catalog = json.dumps({"catalog_ref": ["x"], "catalog": [{"workflow_id": "wf"}]})
    bad_case = json.dumps({"name": "rr-1-a", "at": 1.0, "case": case("one"), "catalog_ref": {}})
    folder = root / ".segments"
    folder.mkdir(parents=True)
    (folder / "1-1.jsonl").write_text("\n".join([header, bad_catalog, bad_case]) + "\n")
    assert review.main(["unpack", str(root)]) == 0
    unpacked = load_case(root / "rr-1-a")
    assert unpacked.meta.description == "one" and unpacked.catalog_file is None
