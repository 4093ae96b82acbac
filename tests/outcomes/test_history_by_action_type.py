"""History matched by action type, through the real server.

Data Storage's entries name the remediation by its action type
(`actionType: IncreaseMemoryLimits`), never by workflow id. A real grpc.aio
server reads them from an aiohttp server speaking the history contract: a
failure of that type on the target keeps every workflow of the type from
being automated again there, while a workflow of another type is. The
embedded history answers alike: it records the action type of the workflow
a controller reports (resolved from the catalog), so another workflow of the
same type is refused after a failure, as the history tool shows the model.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from hapi.v1 import analysis_pb2
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.adapters.history.backends import decode_entry
from hapi_grpc.adapters.history.datastorage import DataStorageHistory
from hapi_grpc.adapters.history.embedded import EmbeddedHistory
from hapi_grpc.adapters.history.memory import MemoryHistoryBackend
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.config import Settings
from hapi_grpc.domain.catalog import Workflow
from hapi_grpc.domain.history import RemediationHistory
from hapi_grpc.domain.investigation.engine import EngineSettings
from hapi_grpc.toolsets.registry import open_toolsets
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import RunningServer, running_server
from tests.helpers.premises import premises_not_under_test
from tests.outcomes.history_server import HistoryServer
from tests.outcomes.test_datastorage_history import entry
from tests.outcomes.test_history_tool import HISTORY, history_answer
from tests.outcomes.test_report_outcome import TENANT, report
from tests.policy.test_grpc import request

R = analysis_pb2.HumanReviewReason
PARAMS = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
_TARGET_PARAMETERS = [
    {"name": "NAMESPACE", "type": "string", "required": True},
    {"name": "DEPLOYMENT_NAME", "type": "string", "required": True},
]


def workflow(workflow_id: str, action_type: str, title: str, memory: bool = False) -> Workflow:
    parameters = list(_TARGET_PARAMETERS)
    if memory:
        parameters.append(
            {"name": "MEMORY_LIMIT_NEW", "type": "string", "required": True,
             "pattern": "^[0-9]+(Mi|Gi)$"}
        )  # fmt: skip
    return Workflow.model_validate(
        {
            "workflow_id": workflow_id,
            "version": "1.0.0",
            "title": title,
            "signal_type": "OOMKilled",
            "labels": {"signal_type": "OOMKilled"},
            "parameters": parameters,
            "action_type": action_type,
        }
    )


CATALOG = [
    workflow("memory-limit-patch", "IncreaseMemoryLimits", "Patch the memory limit", True),
    workflow("memory-limit-helm", "IncreaseMemoryLimits", "Raise the limit in Helm values", True),
    workflow("deployment-restart", "RestartDeployment", "Restart the Deployment"),
]


def search() -> Step:
    return Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical memory"})])


def choose(workflow_id: str) -> Step:
    parameters = PARAMS if "memory" in workflow_id else {k: PARAMS[k] for k in list(PARAMS)[:2]}
    return Step.text(
        json.dumps(
            {
                "analysis_summary": "payment-api is OOMKilled",
                "root_cause_assessment": "memory limit below the working set",
                "rca_severity": "critical",
                "selected_workflow": {
                    "workflow_id": workflow_id,
                    "version": "1.0.0",
                    "confidence": 0.9,
                    "rationale": "the limit is too low",
                    "estimated_risk": "low",
                    "parameters": parameters,
                },
                "alternative_workflows": [],
                "warnings": [],
            }
        )
    )


@pytest.fixture
async def ds() -> AsyncIterator[HistoryServer]:
    server = HistoryServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@asynccontextmanager
async def serving(
    llm: ScriptedLLMServer, history: RemediationHistory
) -> AsyncIterator[RunningServer]:
    """The real server over `CATALOG` and `history`, with the registry's toolsets; the
    history is under test, not the workflows' premises (nothing is read from a cluster)."""
    async with AsyncExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        vouched = premises_not_under_test(directory, [w.workflow_id for w in CATALOG])
        config = Settings(kubernetes="off")
        opened = await open_toolsets(config, history)
        stack.push_async_callback(opened.close)
        provider = OpenAICompatibleProvider(
            llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=10, max_retries=0
        )
        stack.push_async_callback(provider.close)
        yield await stack.enter_async_context(
            running_server(
                catalog=EmbeddedCatalog(CATALOG),
                llm=provider,
                engine_settings=EngineSettings(tool_timeout=2.0),
                toolsets=opened.sources,
                history=history,
                premises_file=vouched,
            )
        )


def data_storage(ds: HistoryServer) -> DataStorageHistory:
    return DataStorageHistory(
        DataStorageClient(ds.url, request_timeout=1.0),
        EmbeddedHistory(MemoryHistoryBackend()),
        cache_ttl=0.0,
    )


async def test_a_failed_action_type_in_data_storage_is_not_automated_again(
    ds: HistoryServer,
) -> None:
    ds.entries = [
        entry("rr-ds-failed", 1, outcome="Failed", effectivenessScore=0.0, signalResolved=False)
    ]
    script = [Step.tool_calls([HISTORY]), search(), *[choose("memory-limit-patch")] * 4]
    async with (
        ScriptedLLMServer("openai", script) as llm,
        serving(llm, data_storage(ds)) as server,
    ):
        result = (await server.stub.AnalyzeIncident(request("rr-now"), timeout=20)).result
    # The model was shown the entry as Data Storage gave it: a type, no workflow id.
    (seen,) = history_answer(llm)["recent"]
    assert seen["action_type"] == "IncreaseMemoryLimits" and "workflow_id" not in seen
    assert result.needs_human_review
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION
    assert not result.HasField("selected_workflow")
    (warning,) = [w for w in result.warnings if "rr-ds-failed" in w]
    assert "memory-limit-patch (IncreaseMemoryLimits)" in warning
    assert "not run again automatically" in warning


async def test_a_workflow_of_another_action_type_is_still_automated(ds: HistoryServer) -> None:
    ds.entries = [entry("rr-ds-failed", 1, outcome="Failed", signalResolved=False)]
    script = [search(), choose("deployment-restart")]
    async with (
        ScriptedLLMServer("openai", script) as llm,
        serving(llm, data_storage(ds)) as server,
    ):
        result = (await server.stub.AnalyzeIncident(request("rr-now"), timeout=20)).result
    assert not result.needs_human_review, result.human_review_reason
    assert result.selected_workflow.workflow_id == "deployment-restart"


async def test_the_embedded_history_records_the_action_type_and_answers_alike() -> None:
    # A controller reports that one memory workflow failed; the next decision
    # picks the other workflow of the same type: refused, as for Data Storage.
    script = [search(), Step.tool_calls([HISTORY]), *[choose("memory-limit-helm")] * 4]
    async with (
        ScriptedLLMServer("openai", script) as llm,
        serving(llm, EmbeddedHistory(MemoryHistoryBackend())) as server,
    ):
        failed = report(
            "rr-embedded-1",
            executed={"workflowId": "memory-limit-patch", "version": "1.0.0",
                      "parameters": PARAMS},
            succeeded=None,
            failed={"reason": "BackoffLimitExceeded", "message": "patch step failed"},
            signalCleared=None,
        )  # fmt: skip
        await server.stub.ReportRemediationOutcome(failed, timeout=10)
        result = (await server.stub.AnalyzeIncident(request("rr-next"), timeout=20)).result
    (seen,) = history_answer(llm)["recent"]
    assert seen["workflow_id"] == "memory-limit-patch"
    assert seen["action_type"] == "IncreaseMemoryLimits"
    assert result.human_review_reason == R.HUMAN_REVIEW_REASON_REPEATS_FAILED_REMEDIATION
    assert any(
        "memory-limit-helm (IncreaseMemoryLimits)" in w and "rr-embedded-1" in w
        for w in result.warnings
    )


async def test_a_decision_is_kept_with_the_action_type_of_its_workflow() -> None:
    history = EmbeddedHistory(MemoryHistoryBackend())
    async with (
        ScriptedLLMServer("openai", [search(), choose("memory-limit-helm")]) as llm,
        serving(llm, history) as server,
    ):
        decided = (await server.stub.AnalyzeIncident(request("rr-kept"), timeout=20)).result
        assert not decided.needs_human_review
        record = await history.by_remediation_id("rr-kept", TENANT)
    assert record.decision is not None
    assert record.decision.workflow_id == "memory-limit-helm"
    assert record.decision.action_type == "IncreaseMemoryLimits"


def test_a_record_kept_before_entries_had_both_keeps_its_workflow_id() -> None:
    # Records written by the previous version held the workflow id in
    # `action_type`: read back, it is the workflow id, and the type is unknown.
    old = {
        "v": 1,
        "entry": {
            "remediation_uid": "rr-old",
            "completed_at": 1.0,
            "outcome": "Failed",
            "action_type": "memory-limit-patch",
            "failure_reason": "BackoffLimitExceeded",
        },
    }
    decoded = decode_entry(json.dumps(old))
    assert decoded is not None
    kept, _ = decoded
    assert kept.workflow_id == "memory-limit-patch" and kept.action_type is None
    assert kept.same_remediation("memory-limit-patch", "IncreaseMemoryLimits")
    assert not kept.same_remediation("memory-limit-helm", "IncreaseMemoryLimits")
