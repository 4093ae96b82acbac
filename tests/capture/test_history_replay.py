"""A failed remediation Data Storage reported by action type only survives capture
and replay: history.yaml keeps the outcome and the type, the harness reports a
workflow of that type from the case's catalog, and the replayed server refuses the
type again (REPEATS_FAILED_REMEDIATION), as the service did when it was captured."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from evals.harness.runner import history_requests
from hapi.v1 import analysis_pb2
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.cases.case import load_case
from hapi_grpc.config import Settings
from hapi_grpc.domain.investigation.engine import EngineSettings
from hapi_grpc.toolsets.registry import open_toolsets
from tests.adapters.history.history_server import HistoryServer
from tests.adapters.history.test_datastorage_history import entry
from tests.capture.test_outcomes import wait_for
from tests.capture.test_sources_and_bounds import ds, written
from tests.domain.history.test_history_by_action_type import (
    CATALOG,
    choose,
    data_storage,
    search,
    serving,
)
from tests.domain.policy.test_grpc import request
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server
from tests.helpers.premises import premises_not_under_test
from tests.toolsets.remediation_history.test_history_tool import HISTORY

__all__ = ["ds"]
R = analysis_pb2.HumanReviewReason


async def _capture(ds: HistoryServer, root: Path) -> Path:
    script = [Step.tool_calls([HISTORY]), search(), *[choose("memory-limit-patch")] * 4]
    with tempfile.TemporaryDirectory() as work:
        vouched = premises_not_under_test(Path(work), [w.workflow_id for w in CATALOG])
        history = data_storage(ds)
        opened = await open_toolsets(Settings(kubernetes="off"), history)
        async with ScriptedLLMServer("openai", script) as llm:
            provider = OpenAICompatibleProvider(
                llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=10, max_retries=0
            )
            try:
                async with running_server(
                    catalog=EmbeddedCatalog(CATALOG),
                    llm=provider,
                    engine_settings=EngineSettings(tool_timeout=2.0),
                    toolsets=opened.sources,
                    history=history,
                    premises_file=vouched,
                    capture_dir=str(root),
                ) as server:
                    await server.stub.AnalyzeIncident(request("rr-captured"), timeout=20)
                    await wait_for(lambda: bool(written(root)))
            finally:
                await provider.close()
                await opened.close()
    (case,) = written(root)
    return case


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
