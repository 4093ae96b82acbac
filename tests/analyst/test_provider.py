"""The built-in analyst's mechanics: same loop, same tools, honest rule-based answers.

No cluster is read in these tests: without evidence the analyst automates nothing that
changes the cluster, and no parameter comes from the alert's prose or a schema
default. Decisions on evidence are tested against the real API server
(`tests/analyst/test_grpc.py`) and by the evaluation suite through the real server,
API server and Prometheus (`tests/evals/test_runner.py`).
"""

from __future__ import annotations

import json

import pytest

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.analyst import BuiltinAnalyst
from hapi_grpc.domain.catalog import ParameterSpec, Workflow, WorkflowLabels
from hapi_grpc.domain.incident import (
    ClusterContext,
    ErrorDetails,
    Incident,
    SignalInfo,
)
from hapi_grpc.domain.investigation.engine import InvestigationEngine
from hapi_grpc.domain.llm import ChatMessage, LLMProvider, ToolDefinition
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.prompt import build_messages
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason, ToolCallStatus
from tests.fakes.investigation import FailingCatalog, RecordingCatalog, bundled_catalog

OOM = Incident(
    remediation_id="rr-oom",
    signal=SignalInfo(
        "OOMKilled", "critical", "deployment", "KubePodOOMKilled", "payments", "Deployment", "api"
    ),
    # The alert's own account of the limit and a "good" revision: prose, never evidence.
    error_details=ErrorDetails(
        "Container api was OOMKilled; memory limit 768Mi",
        description="New rollout (revision 7); revision 6 was healthy",
    ),
)
NODE = Incident(
    remediation_id="rr-node",
    signal=SignalInfo("NodeNotReady", "critical", "node", resource_kind="Node", resource_name="w3"),
)


async def investigate(incident: Incident, catalog: object | None = None) -> AnalysisResult:
    engine = InvestigationEngine(catalog or bundled_catalog(), BuiltinAnalyst())  # type: ignore[arg-type]
    return await engine.investigate(incident)


def test_builtin_is_an_llm_provider_without_a_language_model() -> None:
    analyst = BuiltinAnalyst()
    assert isinstance(analyst, LLMProvider)
    assert (analyst.name, analyst.model, analyst.uses_language_model) == (
        "builtin",
        "builtin",
        False,
    )


async def test_it_decides_from_the_incident_it_is_given_not_from_the_prompt() -> None:
    # The conversation's user message describes another incident: the analyst reads
    # the Incident the engine hands it, never the prompt text.
    messages = build_messages(NODE)
    tools = [ToolDefinition("search_workflow_catalog", "", {"type": "object"})]
    analyst = BuiltinAnalyst().investigating(OOM, Observed())
    step = await analyst.complete(list(messages), tools)
    (call,) = step.tool_calls
    assert call.name == "search_workflow_catalog"
    assert json.loads(call.arguments) == {"query": "OOMKilled critical", "component": "deployment"}
    # And the same prompt given with the node incident searches for that one.
    node = await BuiltinAnalyst().investigating(NODE, Observed()).complete(list(messages), tools)
    assert json.loads(node.tool_calls[0].arguments)["query"] == "NodeNotReady critical"


@pytest.mark.parametrize("incident", [OOM, NODE], ids=["oom", "node"])
async def test_without_cluster_evidence_no_state_changing_workflow_is_automated(
    incident: Incident,
) -> None:
    result = await investigate(incident)
    read_only = {w.workflow_id for w in bundled_catalog().workflows if w.read_only}
    selected = result.selected_workflow
    if selected is not None and not result.needs_human_review:
        assert selected.workflow_id in read_only, selected
    # Passed over before validation: nothing state-changing was even validated.
    assert all(a.workflow_id in read_only for a in result.validation_attempts)
    assert "nothing was read from the cluster" in result.root_cause_assessment
    assert result.model == "builtin" and result.language_model_used is False
    assert "no language model was used" in result.analysis_summary


async def test_no_parameter_comes_from_the_alert_text_or_a_schema_default() -> None:
    # Every workflow declared read-only, so evidence is not what stops it: only the
    # parameter values can. The alert states a limit and a "healthy" revision, the
    # schemas have defaults; none of it is evidence, so nothing is validated.
    catalog = EmbeddedCatalog(
        [
            w.model_copy(update={"preconditions": (), "invariants": (), "read_only": True})
            for w in bundled_catalog().workflows
            if w.signal_type in ("OOMKilled", "ImagePullBackOff")
        ]
    )
    result = await investigate(OOM, RecordingCatalog(catalog))
    assert result.validation_attempts == []
    assert result.selected_workflow is None and result.needs_human_review
    assert "gives no value for" in result.root_cause_assessment


async def test_a_read_only_workflow_without_parameters_needs_no_evidence() -> None:
    workflow = Workflow(
        workflow_id="snapshot-v1",
        version="1.0.0",
        title="Diagnostics snapshot",
        signal_type="MysterySignal",
        labels=WorkflowLabels(signal_type="MysterySignal"),
        read_only=True,
    )
    incident = Incident(remediation_id="r", signal=SignalInfo("MysterySignal", "low"))
    result = await investigate(incident, RecordingCatalog(EmbeddedCatalog([workflow])))
    assert result.selected_workflow is not None
    assert result.selected_workflow.workflow_id == "snapshot-v1"
    assert [a.valid for a in result.validation_attempts] == [True]
    # Its confidence is the catalog's match score, nothing more.
    hits = json.loads(result.tool_calls[0].result)["workflows"]
    assert result.selected_workflow.confidence == hits[0]["confidence"]


async def test_a_required_parameter_with_no_role_is_never_guessed() -> None:
    workflow = Workflow(
        workflow_id="needs-secret-v1",
        version="1.0.0",
        title="Needs a value nobody knows",
        signal_type="MysterySignal",
        labels=WorkflowLabels(signal_type="MysterySignal"),
        read_only=True,
        parameters=(ParameterSpec(name="UNKNOWABLE_VALUE", required=True, default="x"),),
    )
    incident = Incident(
        remediation_id="r",
        signal=SignalInfo("MysterySignal", "low"),
        cluster=ClusterContext(signal_labels={"unknowable_value": "from-a-label"}),
    )
    result = await investigate(incident, RecordingCatalog(EmbeddedCatalog([workflow])))
    assert result.selected_workflow is None
    assert result.validation_attempts == []
    assert [a.workflow_id for a in result.alternative_workflows] == ["needs-secret-v1"]
    assert result.needs_human_review


async def test_builtin_with_no_matching_workflow_selects_nothing() -> None:
    result = await investigate(
        Incident(remediation_id="r", signal=SignalInfo("QuantumFluxMeltdown", "low"))
    )
    assert result.selected_workflow is None
    assert result.human_review_reason is HumanReviewReason.NO_MATCHING_WORKFLOWS
    assert "no language model was used" in result.analysis_summary


async def test_builtin_in_degraded_mode() -> None:
    result = await investigate(OOM, FailingCatalog())
    assert result.selected_workflow is None
    assert result.tool_calls[0].status is ToolCallStatus.ERROR
    assert result.human_review_reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE
    assert "unavailable" in result.analysis_summary


async def test_on_the_last_turn_it_answers_with_what_it_has() -> None:
    analyst = BuiltinAnalyst().investigating(OOM, Observed())
    tools = [ToolDefinition("search_workflow_catalog", "", {"type": "object"})]
    step = await analyst.complete([ChatMessage("user", "x")], tools, tool_choice="none")
    assert not step.tool_calls
    answer = json.loads(step.content)
    assert answer["selected_workflow"] is None
    assert answer["target_resource"]["kind"] == "Deployment"
