"""The built-in analyst: same loop, same tools, honest rule-based answers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from google.protobuf import json_format

from hapi.v1 import service_pb2
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.llm.builtin import BuiltinAnalyst
from hapi_grpc.adapters.llm.builtin_parameters import Facts
from hapi_grpc.domain.catalog import ParameterSpec, Workflow, WorkflowLabels
from hapi_grpc.domain.incident import (
    ClusterContext,
    EnrichmentResults,
    ErrorDetails,
    Incident,
    SignalInfo,
)
from hapi_grpc.domain.investigation.engine import InvestigationEngine
from hapi_grpc.domain.llm import LLMProvider
from hapi_grpc.domain.result import AnalysisResult, HumanReviewReason, ToolCallStatus
from hapi_grpc.transport import converters
from tests.fakes.investigation import FailingCatalog, RecordingCatalog, bundled_catalog

EXAMPLES = sorted(
    p
    for p in (Path(__file__).parents[2] / "examples").glob("*.json")
    # outcome reports are not incidents; recoveries: see test_builtin_recovery
    if "invalid" not in p.name and not p.name.startswith(("outcome-", "recovery-"))
)
EXAMPLE_TEXTS = {p.stem: p.read_text() for p in EXAMPLES}

INCIDENTS = {
    "OOMKilled": Incident(
        remediation_id="rr-oom",
        signal=SignalInfo(
            "OOMKilled",
            "critical",
            "deployment",
            "KubePodOOMKilled",
            "payments",
            "Deployment",
            "payment-api",
        ),
        error_details=ErrorDetails("Container payment-api was OOMKilled; memory limit 768Mi"),
        enrichment=EnrichmentResults(custom_labels={"constraint": ("cost-constrained",)}),
    ),
    "CrashLoopBackOff": Incident(
        remediation_id="rr-clb",
        signal=SignalInfo(
            "CrashLoopBackOff",
            "high",
            "deployment",
            "KubePodCrashLooping",
            "checkout",
            "Deployment",
            "cart-service",
        ),
    ),
    "NodeNotReady": Incident(
        remediation_id="rr-node",
        signal=SignalInfo(
            "NodeNotReady", "critical", "node", resource_kind="Node", resource_name="worker-node-3"
        ),
    ),
    "ImagePullBackOff": Incident(
        remediation_id="rr-img",
        signal=SignalInfo(
            "ImagePullBackOff",
            "medium",
            "deployment",
            namespace="search",
            resource_kind="Deployment",
            resource_name="indexer",
        ),
        error_details=ErrorDetails(
            "Failed to pull image: unauthorized",
            description="New rollout (revision 7) cannot pull its image; revision 6 was healthy",
        ),
    ),
    "CertificateNotReady": Incident(
        remediation_id="rr-cert",
        signal=SignalInfo(
            "CertificateNotReady",
            "high",
            "certificate",
            namespace="demo-cert-gitops",
            resource_kind="Certificate",
            resource_name="demo-app-cert",
        ),
        enrichment=EnrichmentResults(detected_labels={"gitOpsManaged": True}),
    ),
}


async def investigate(incident: Incident, catalog: object | None = None) -> AnalysisResult:
    engine = InvestigationEngine(catalog or bundled_catalog(), BuiltinAnalyst())  # type: ignore[arg-type]
    return await engine.investigate(incident)


def assert_validated_and_honest(result: AnalysisResult) -> None:
    assert result.needs_human_review is False, (result.human_review_reason, result.warnings)
    selected = result.selected_workflow
    assert selected is not None
    assert result.validation_attempts and result.validation_attempts[-1].valid
    assert result.validation_attempts[-1].workflow_id == selected.workflow_id
    assert [c.name for c in result.tool_calls][:1] == ["search_workflow_catalog"]
    assert result.model == "builtin" and result.language_model_used is False
    assert "no language model was used" in result.analysis_summary
    assert "no language model was used" in result.root_cause_assessment
    assert any("No language model was used" in w for w in result.warnings)
    # Its confidence is the catalog's match score, nothing more.
    hits = json.loads(result.tool_calls[0].result)["workflows"]
    score = next(h["confidence"] for h in hits if h["workflow_id"] == selected.workflow_id)
    assert selected.confidence == score
    assert (result.prompt_tokens, result.completion_tokens) == (0, 0)


def test_builtin_is_an_llm_provider_without_a_language_model() -> None:
    analyst = BuiltinAnalyst()
    assert isinstance(analyst, LLMProvider)
    assert (analyst.name, analyst.model, analyst.uses_language_model) == (
        "builtin",
        "builtin",
        False,
    )


# Mechanics (searching, filling, validating) without the catalog's premises: no
# cluster is read in these tests, and without evidence the analyst selects only
# read-only workflows, so here every workflow is declared read-only. The
# premises have their own tests below and in tests/safety.
_UNDECLARED = EmbeddedCatalog(
    [
        w.model_copy(update={"preconditions": (), "invariants": (), "read_only": True})
        for w in bundled_catalog().workflows
    ]
)


@pytest.mark.parametrize("signal", list(INCIDENTS))
async def test_builtin_answers_each_signal_with_a_validated_workflow(signal: str) -> None:
    result = await investigate(INCIDENTS[signal], _UNDECLARED)
    assert_validated_and_honest(result)
    assert result.rca_severity == INCIDENTS[signal].signal.severity


@pytest.mark.parametrize("signal", list(INCIDENTS))
async def test_without_cluster_evidence_no_state_changing_workflow_is_automated(
    signal: str,
) -> None:
    result = await investigate(INCIDENTS[signal])
    read_only = {w.workflow_id for w in bundled_catalog().workflows if w.read_only}
    selected = result.selected_workflow
    if selected is not None and not result.needs_human_review:
        assert selected.workflow_id in read_only, selected
    else:
        assert result.human_review_reason is HumanReviewReason.PRECONDITION_NOT_MET
        assert any("Not automated:" in w and "precondition" in w for w in result.warnings)
    # Passed over before validation: nothing state-changing was even validated.
    assert all(a.workflow_id in read_only for a in result.validation_attempts)


async def test_builtin_fills_parameters_from_the_facts() -> None:
    oom = await investigate(INCIDENTS["OOMKilled"], _UNDECLARED)
    assert oom.selected_workflow is not None
    assert oom.selected_workflow.workflow_id == "oomkill-increase-memory-v1"
    assert oom.selected_workflow.parameters["NAMESPACE"] == "payments"
    assert oom.selected_workflow.parameters["DEPLOYMENT_NAME"] == "payment-api"
    assert oom.selected_workflow.parameters["MEMORY_LIMIT_NEW"] == "1536Mi"  # 768Mi doubled
    assert oom.target_resource is not None and oom.target_resource.api_group == "apps"

    node = await investigate(INCIDENTS["NodeNotReady"], _UNDECLARED)
    assert node.selected_workflow is not None
    assert node.selected_workflow.parameters["NODE_NAME"] == "worker-node-3"

    image = await investigate(INCIDENTS["ImagePullBackOff"], _UNDECLARED)
    assert image.selected_workflow is not None
    # The credentials fix needs a secret name the facts do not give; the rollback
    # takes the revision the description calls healthy.
    assert image.selected_workflow.workflow_id == "imagepull-rollback-deployment-v1"
    assert image.selected_workflow.parameters["REVISION"] == 6


@pytest.mark.parametrize("name", list(EXAMPLE_TEXTS))
async def test_builtin_answers_every_example_incident(name: str) -> None:
    request = json_format.Parse(EXAMPLE_TEXTS[name], service_pb2.AnalyzeIncidentRequest())
    result = await investigate(converters.incident_from_proto(request.incident), _UNDECLARED)
    assert_validated_and_honest(result)


def test_there_are_examples_to_answer() -> None:
    assert len(EXAMPLES) >= 5


async def test_builtin_with_no_matching_workflow_selects_nothing() -> None:
    result = await investigate(
        Incident(remediation_id="r", signal=SignalInfo("QuantumFluxMeltdown", "low"))
    )
    assert result.selected_workflow is None
    assert result.human_review_reason is HumanReviewReason.NO_MATCHING_WORKFLOWS
    assert "no language model was used" in result.analysis_summary


async def test_builtin_in_degraded_mode() -> None:
    result = await investigate(INCIDENTS["OOMKilled"], FailingCatalog())
    assert result.selected_workflow is None
    assert result.tool_calls[0].status is ToolCallStatus.ERROR
    assert result.human_review_reason is HumanReviewReason.DATA_STORAGE_UNAVAILABLE
    assert "unavailable" in result.analysis_summary


async def test_builtin_corrects_parameters_from_validator_hints() -> None:
    workflow = Workflow(
        workflow_id="set-restart-policy-v1",
        version="1.0.0",
        read_only=True,  # no cluster is read here: only a read-only workflow may be chosen
        title="Set restart policy",
        signal_type="PodRestartStorm",
        labels=WorkflowLabels(signal_type="PodRestartStorm", component="pod"),
        parameters=(
            ParameterSpec(name="NAMESPACE", required=True),
            ParameterSpec(name="RESTART_POLICY", required=True, enum=("Always", "OnFailure")),
            ParameterSpec(name="BATCH_SIZE", type="integer", minimum=1, maximum=5),
        ),
    )
    catalog = RecordingCatalog(EmbeddedCatalog([workflow]))
    incident = Incident(
        remediation_id="r",
        signal=SignalInfo(
            "PodRestartStorm",
            "high",
            "pod",
            namespace="shop",
            resource_kind="Pod",
            resource_name="web-1",
        ),
        # Labels named like parameters are used; these values are subtly wrong.
        cluster=ClusterContext(signal_labels={"restart_policy": "always", "batch_size": "9"}),
    )
    result = await investigate(incident, catalog)

    attempts = result.validation_attempts
    assert [a.valid for a in attempts] == [False]
    assert attempts[0].parameters["RESTART_POLICY"] == "always"
    # "9" became the integer 9; the schema's maximum is 5. The value came from the
    # incident, so it is not clamped to fit: a human decides.
    assert attempts[0].parameters["BATCH_SIZE"] == 9
    assert result.selected_workflow is None
    assert result.needs_human_review is True

    # Without the out-of-range value the respelling the validator suggests is taken.
    incident = dataclasses.replace(
        incident, cluster=ClusterContext(signal_labels={"restart_policy": "always"})
    )
    result = await investigate(incident, RecordingCatalog(EmbeddedCatalog([workflow])))
    assert [a.valid for a in result.validation_attempts] == [False, True]
    assert result.selected_workflow is not None
    assert result.selected_workflow.parameters == {"NAMESPACE": "shop", "RESTART_POLICY": "Always"}
    assert result.needs_human_review is False


async def test_builtin_gives_up_honestly_when_parameters_cannot_be_filled() -> None:
    workflow = Workflow(
        workflow_id="needs-secret-v1",
        version="1.0.0",
        title="Needs a value nobody knows",
        signal_type="MysterySignal",
        labels=WorkflowLabels(signal_type="MysterySignal"),
        parameters=(ParameterSpec(name="UNKNOWABLE_VALUE", required=True),),
    )
    result = await investigate(
        Incident(remediation_id="r", signal=SignalInfo("MysterySignal", "low")),
        RecordingCatalog(EmbeddedCatalog([workflow])),
    )
    assert result.selected_workflow is None
    assert result.validation_attempts == []
    assert [a.workflow_id for a in result.alternative_workflows] == ["needs-secret-v1"]
    assert result.needs_human_review is True


# --- quantities: every notation is read, a missing limit is never a schema default ----


@pytest.mark.parametrize(
    ("limit", "doubled"),
    [
        ("2G", "3906250Ki"),  # 4e9 bytes, rounded up to whole Ki
        ("1.5Gi", "3Gi"),
        ("1048576Ki", "2Gi"),
        ("1500M", "2929688Ki"),
        ("768Mi", "1536Mi"),
    ],
)
def test_the_memory_limit_is_read_in_every_quantity_notation(limit: str, doubled: str) -> None:
    facts = Facts.read("")
    facts = dataclasses.replace(facts, error_text=f"memory limit {limit}. OOMKilled")
    spec = {"name": "MEMORY_LIMIT_NEW", "type": "string", "required": True, "default": "512Mi"}
    assert facts.fill([spec]) == {"MEMORY_LIMIT_NEW": doubled}


def test_an_unknown_limit_is_not_filled_from_the_schema_default() -> None:
    facts = dataclasses.replace(Facts.read(""), error_text="Container was OOMKilled")
    spec = {"name": "MEMORY_LIMIT_NEW", "type": "string", "required": True, "default": "512Mi"}
    assert facts.fill([spec]) is None  # not 512Mi, which may be below the current limit
