"""A failed remediation Data Storage reported by action type only survives capture
and replay: history.yaml keeps the outcome and the type, the harness reports a
workflow of that type from the case's catalog, and the replayed server refuses the
type again (REPEATS_FAILED_REMEDIATION), as the service did when it was captured."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from evals.harness.runner import history_requests
from hapi.v1 import analysis_pb2
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.cases.case import load_case
from tests.adapters.history.history_server import HistoryServer
from tests.adapters.history.test_datastorage_history import entry
from tests.capture.test_sources_and_bounds import capture_history_case, ds
from tests.domain.history.test_history_by_action_type import (
    CATALOG,
    choose,
    search,
    serving,
)
from tests.domain.policy.test_grpc import request
from tests.fakes.scripted_llm import ScriptedLLMServer

__all__ = ["ds"]
R = analysis_pb2.HumanReviewReason


async def _capture(ds: HistoryServer, root: Path) -> Path:
    return await capture_history_case(ds, root, "rr-captured", choices=4)


async def test_a_failed_action_type_is_refused_again_on_replay(
    ds: HistoryServer, tmp_path: Path
) -> None:
    ds.entries = [entry("rr-ds-failed", 2, outcome="Failed", signalResolved=False)]
    case_dir = await _capture(ds, tmp_path / "captured")
    reports: list[dict[str, Any]] = yaml.safe_load((case_dir / "history.yaml").read_text())
    (failed,) = reports
    assert failed["actionType"] == "IncreaseMemoryLimits"
    assert "failed" in failed and "declined" not in failed and "executed" not in failed

    case = load_case(case_dir)
    (sent,) = history_requests(case, "r1", time.time())
    assert sent.WhichOneof("result") == "failed"
    executed = sent.executed.workflow_id
    assert {w.workflow_id: w.action_type for w in CATALOG}[executed] == "IncreaseMemoryLimits"

    # The replay: another workflow of the same type is refused after the failure.
    async with (
        ScriptedLLMServer("openai", [search(), *[choose("memory-limit-helm")] * 4]) as llm,
        serving(llm, EmbeddedHistory(MemoryHistoryBackend())) as server,
    ):
        await server.stub.ReportRemediationOutcome(sent, timeout=10)
        result = (await server.stub.AnalyzeIncident(request("rr-replay"), timeout=20)).result
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION
    assert not result.HasField("selected_workflow")
