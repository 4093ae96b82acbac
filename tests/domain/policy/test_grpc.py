"""The policy through the real grpc.aio server, with a scripted model over real HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from prometheus_client import REGISTRY

from hapi.v1 import analysis_pb2, service_pb2
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.investigation.engine import EngineSettings
from tests.fakes.investigation import RecordingCatalog
from tests.fakes.redis_server import RedisServer, running_redis
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import RunningServer, running_server

EXAMPLES = Path(__file__).parents[3] / "examples"
OOM_REQUEST = json.loads((EXAMPLES / "oomkilled.json").read_text())
OOM_ID = "oomkill-increase-memory-v1"
PARAMS = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
R = analysis_pb2.HumanReviewReason
# The review reason of a policy verdict, where the contract has it.
POLICY_REASON = (
    R.Value("HUMAN_REVIEW_REASON_POLICY_REQUIRES_REVIEW")
    if ("HUMAN_REVIEW_REASON_POLICY_REQUIRES_REVIEW" in R.keys())
    else None
)

FORBID = """
rules:
  - name: no-memory-changes-in-production
    action: forbid
    when: incident.environment == "production" && workflow.id == "oomkill-increase-memory-v1"
    message: memory limits are changed through the release process
"""
RATE = """
rules:
  - name: one-change-per-target-per-hour
    action: rate_limit
    limit: 1
    window: 1h
"""


def search() -> Step:
    return Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical memory"})])


def answer() -> Step:
    return Step.text(
        json.dumps(
            {
                "analysis_summary": "payment-api is repeatedly OOMKilled",
                "root_cause_assessment": "memory limit below the working set",
                "rca_severity": "critical",
                "selected_workflow": {
                    "workflow_id": OOM_ID,
                    "version": "1.0.0",
                    "confidence": 0.9,
                    "rationale": "steady growth to the limit",
                    "estimated_risk": "low",
                    "parameters": PARAMS,
                },
                "alternative_workflows": [],
                "warnings": [],
            }
        )
    )


def request(remediation_id: str, kind: Any = service_pb2.AnalyzeIncidentRequest) -> Any:
    body = json.loads(json.dumps(OOM_REQUEST))
    body["incident"]["remediationId"] = remediation_id
    return json_format.Parse(json.dumps(body), kind())


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path) as server:
        yield server


@asynccontextmanager
async def servers(
    llm: ScriptedLLMServer, count: int, **settings: Any
) -> AsyncIterator[list[RunningServer]]:
    """`count` replicas of the real server, each with its own model client."""
    async with AsyncExitStack() as stack:
        running = []
        for _ in range(count):
            provider = OpenAICompatibleProvider(
                llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=10, max_retries=0
            )
            stack.push_async_callback(provider.close)
            running.append(
                await stack.enter_async_context(
                    running_server(
                        catalog=RecordingCatalog(),
                        llm=provider,
                        engine_settings=EngineSettings(tool_timeout=2.0),
                        **settings,
                    )
                )
            )
        yield running


async def test_a_forbidden_workflow_is_not_selected_and_the_rule_is_named(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(FORBID)
    labels = {"rule": "no-memory-changes-in-production", "action": "forbid"}
    fired_before = REGISTRY.get_sample_value("hapi_policy_rules_fired_total", labels) or 0.0
    async with (
        ScriptedLLMServer("openai", [search(), answer()]) as llm,
        servers(llm, 1, policy_file=str(path)) as (srv,),
    ):
        response = await srv.stub.AnalyzeIncident(request("rr-policy-1"), timeout=20)
    result = response.result
    # Operators see which rules change decisions, by rule and action.
    assert REGISTRY.get_sample_value("hapi_policy_rules_fired_total", labels) == fired_before + 1
    assert result.needs_human_review
    if POLICY_REASON is not None:
        assert result.human_review_reason == POLICY_REASON
    assert not result.HasField("selected_workflow")
    assert result.alternative_workflows[0].workflow_id == OOM_ID
    assert (
        "Policy rule 'no-memory-changes-in-production' forbids workflow"
        " 'oomkill-increase-memory-v1'; it was not selected (memory limits are changed"
        " through the release process)."
    ) in result.warnings


async def test_without_the_policy_the_same_answer_is_automated(tmp_path: Path) -> None:
    async with (
        ScriptedLLMServer("openai", [search(), answer()]) as llm,
        servers(llm, 1) as (srv,),
    ):
        response = await srv.stub.AnalyzeIncident(request("rr-policy-2"), timeout=20)
    assert not response.result.needs_human_review
    assert response.result.selected_workflow.workflow_id == OOM_ID


async def test_a_policy_changed_while_serving_applies_to_the_next_decision(
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules: []\n")
    script = [search(), answer()] * 2
    async with (
        ScriptedLLMServer("openai", script, per_conversation=False) as llm,
        servers(llm, 1, policy_file=str(path), policy_check_seconds=0.01) as (srv,),
    ):
        first = await srv.stub.AnalyzeIncident(request("rr-policy-3"), timeout=20)
        path.write_text(FORBID)
        await asyncio.sleep(0.05)  # past the check interval
        second = await srv.stub.AnalyzeIncident(request("rr-policy-4"), timeout=20)
    assert not first.result.needs_human_review
    assert second.result.needs_human_review
    assert any("no-memory-changes-in-production" in w for w in second.result.warnings)


async def test_the_rate_limit_holds_across_two_replicas_sharing_redis(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """A flapping alert answered by two replicas: one automated change per target and hour."""
    path = tmp_path / "policy.yaml"
    path.write_text(RATE)
    script = [search(), answer()] * 4
    async with (
        ScriptedLLMServer("openai", script, per_conversation=False) as llm,
        servers(llm, 2, policy_file=str(path), cache_url=redis_server.url) as replicas,
    ):
        results = [
            (await replicas[i % 2].stub.AnalyzeIncident(request(f"rr-flap-{i}"), timeout=20)).result
            for i in range(4)
        ]
    assert [r.needs_human_review for r in results] == [False, True, True, True]
    for limited in results[1:]:
        assert limited.selected_workflow.workflow_id == OOM_ID  # kept for the reviewer
        assert any("one-change-per-target-per-hour" in w for w in limited.warnings)
        if POLICY_REASON is not None:
            assert limited.human_review_reason == POLICY_REASON


async def test_the_streamed_result_carries_the_policy_verdict(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(FORBID)
    async with (
        ScriptedLLMServer("openai", [search(), answer()]) as llm,
        servers(llm, 1, policy_file=str(path)) as (srv,),
    ):
        frames = [
            frame
            async for frame in srv.stub.AnalyzeIncidentStream(
                request("rr-stream-1", service_pb2.AnalyzeIncidentStreamRequest), timeout=20
            )
        ]
    result = frames[-1].result
    assert result.needs_human_review
    assert not result.HasField("selected_workflow")
    assert any("no-memory-changes-in-production" in w for w in result.warnings)
