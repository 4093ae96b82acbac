"""Capture's bounds before and at the writer: the investigations waiting for their
catalog fetches are at most the writer's queue (past that a case is dropped and
counted, never pinned), the fetches of one case run together under one timeout,
and a case larger than the whole directory is refused instead of evicting every
other case."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from prometheus_client import REGISTRY

from hapi_grpc.adapters.catalog.loader import load_bundled_catalog
from hapi_grpc.capture import capture as capture_module
from hapi_grpc.capture.capture import Capture
from hapi_grpc.capture.recorder import CaseRecorder
from hapi_grpc.capture.segments import closed_segments, read_records
from hapi_grpc.capture.writer import CaseWriter
from hapi_grpc.domain.catalog import Workflow
from hapi_grpc.domain.incident import Incident, SignalInfo
from hapi_grpc.domain.result import AnalysisResult
from hapi_grpc.domain.tenancy import Caller
from tests.capture.test_sources_and_bounds import written
from tests.fakes.investigation import wire_catalog


def counted(result: str) -> float:
    return REGISTRY.get_sample_value("hapi_captured_cases_total", {"result": result}) or 0.0


class SlowCatalog:
    """The bundled catalog, each workflow fetched after `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.inner = wire_catalog()
        self.seconds = seconds

    async def get_workflow(self, workflow_id: str) -> Workflow:
        await asyncio.sleep(self.seconds)
        return await self.inner.get_workflow(workflow_id)


def investigation(index: int, ids: list[str]) -> tuple[Incident, AnalysisResult, CaseRecorder]:
    rid = f"rr-bound-{index:03d}"
    signal = SignalInfo("OOMKilled", namespace="payments", resource_kind="Deployment",
                        resource_name="api")  # fmt: skip
    recorder = CaseRecorder()
    recorder.workflow_ids = dict.fromkeys(ids)
    return Incident(remediation_id=rid, signal=signal), AnalysisResult(rid), recorder


async def test_pending_captures_are_bounded_and_their_fetches_run_together(
    tmp_path: Path,
) -> None:
    ids = [w.workflow_id for w in load_bundled_catalog()][:20]
    assert len(ids) == 20
    queue = 4
    writer = CaseWriter(tmp_path / "captured", max_case_bytes=1 << 22, max_bytes=1 << 30,
                        queue_size=queue)  # fmt: skip
    capture = Capture(writer, SlowCatalog(0.5), "none", "none")  # type: ignore[arg-type]
    dropped = counted("dropped")
    started = time.monotonic()
    for index in range(10 * queue):
        incident, result, recorder = investigation(index, ids)
        capture.finished(incident, Caller(), result, recorder)
        assert len(capture._pending) <= queue
    assert counted("dropped") - dropped == 9 * queue
    await asyncio.wait(list(capture._pending), timeout=capture_module.WORKFLOW_SECONDS + 1)
    # 20 fetches of 0.5 s each, fetched together: well under one after another (10 s).
    assert time.monotonic() - started < capture_module.WORKFLOW_SECONDS + 1
    assert not capture._pending
    await asyncio.to_thread(writer.flush, rotate=True)
    cases = written(tmp_path / "captured")
    assert len(cases) == queue
    catalog = (cases[0] / "catalog.yaml").read_text()
    assert all(f"workflow_id: {i}\n" in catalog for i in ids)  # every one fetched
    await capture.close()


async def test_late_workflows_are_left_out_within_one_timeout(tmp_path: Path) -> None:
    ids = [w.workflow_id for w in load_bundled_catalog()][:20]
    writer = CaseWriter(tmp_path / "captured", max_case_bytes=1 << 22, max_bytes=1 << 30,
                        queue_size=4)  # fmt: skip
    capture = Capture(writer, SlowCatalog(60.0), "none", "none")  # type: ignore[arg-type]
    started = time.monotonic()
    assert await capture._workflows(ids) == []
    assert time.monotonic() - started < capture_module.WORKFLOW_SECONDS + 1
    await capture.close()


def test_a_case_larger_than_the_directory_is_refused_not_evicting_the_others(
    tmp_path: Path,
) -> None:
    root = tmp_path / "captured"
    bound = 65536
    writer = CaseWriter(root, max_case_bytes=4 * bound, max_bytes=bound, queue_size=8)
    for name in ("a", "b"):
        writer.offer((name, lambda name=name: (record(name, 1000), None)))
    writer.flush()
    too_large, evicted = counted("too_large"), counted("evicted")
    writer.offer(("huge", lambda: (record("huge", 2 * bound), None)))
    writer.flush()
    writer.close()
    assert records(root) == ["a", "b"]
    assert counted("too_large") - too_large == 1
    assert counted("evicted") == evicted


def record(name: str, size: int) -> bytes:
    return (
        json.dumps({"name": name, "at": 0, "case": {"description": "x" * size}}) + "\n"
    ).encode()


def records(root: Path) -> list[str]:
    """The names of the cases in the closed segments, in order."""
    return [r["name"] for s in closed_segments(root) for r in read_records(s) if "case" in r]


def test_the_oldest_segments_make_room_and_are_counted(tmp_path: Path) -> None:
    root = tmp_path / "captured"
    bound = 65536
    writer = CaseWriter(root, max_case_bytes=bound, max_bytes=bound, queue_size=64)
    evicted = counted("evicted")
    for index in range(20):  # 20 cases of 8 KiB: a segment each (an eighth of the bound)
        writer.offer((f"c{index:02d}", lambda index=index: (record(f"c{index:02d}", 8192), None)))
    writer.close()
    kept = records(root)
    assert kept == [f"c{i:02d}" for i in range(20)][-len(kept) :]  # the newest remain
    assert 5 <= len(kept) < 8
    assert sum(s.stat().st_size for s in closed_segments(root)) <= bound
    assert counted("evicted") - evicted == 20 - len(kept)
