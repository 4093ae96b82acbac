"""A case's `history.yaml`: loaded, checked, and turned into the outcome reports of one run."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from evals.harness.cases import CASES_DIR
from evals.harness.runner import _group_key, _one_run, history_requests
from hapi_grpc.cases.case import CaseError, load_case


def test_a_case_with_history_loads_and_reports_it_per_run() -> None:
    case = load_case(CASES_DIR / "history-oom-third-recurrence")
    assert len(case.history) == 2
    reports = history_requests(case, "0-42", now=1_800_000_000.0)
    assert [r.remediation_id for r in reports] == ["rr-hist-oom-1-0-42", "rr-hist-oom-2-0-42"]
    assert reports[0].completed_at.seconds == 1_800_000_000 - 420 * 60
    assert reports[1].executed.workflow_id == "oomkill-increase-memory-v1"
    assert reports[1].HasField("succeeded")
    # Its own server: history never leaks into a case on the same target.
    assert _group_key(case)[1] == case.name


def test_a_case_without_history_is_unchanged() -> None:
    case = load_case(CASES_DIR / "oomkilled-raise-limit")
    assert case.history == () and history_requests(case, "0-1", 0.0) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{}", "a list of outcome reports"),
        ("- {remediationId: a, attempt: 1}", "minutesAgo"),
        ("- {remediationId: a, minutesAgo: 5, bogus: 1}", "report 0"),
    ],
)
def test_a_malformed_history_names_the_file(tmp_path: Path, text: str, problem: str) -> None:
    directory = tmp_path / "case"
    shutil.copytree(CASES_DIR / "history-benign-old-success", directory)
    (directory / "history.yaml").write_text(text)
    with pytest.raises(CaseError, match=problem) as raised:
        load_case(directory)
    assert "history.yaml" in str(raised.value)


class _Stub:
    """Answers at once; each outcome report takes `report_seconds`."""

    def __init__(self, report_seconds: float) -> None:
        self.report_seconds = report_seconds
        self.reports = 0

    async def ReportRemediationOutcome(self, request: object, timeout: float) -> object:
        self.reports += 1
        await asyncio.sleep(self.report_seconds)
        return object()

    async def AnalyzeIncident(self, request: object, timeout: float) -> object:
        from hapi.v1 import service_pb2

        return service_pb2.AnalyzeIncidentResponse()


def test_latency_is_the_analysis_not_the_history_reported_first() -> None:
    case = load_case(CASES_DIR / "history-oom-third-recurrence")
    stub = _Stub(report_seconds=0.3)
    score = asyncio.run(_one_run(stub, case, 0, timeout=5.0))
    assert stub.reports == 2
    assert score.latency_seconds < 0.2
