"""The built-in analyst in a recovery: it does not repeat a failed approach.

Read from the incident's recovery context: a workflow whose execution failed in a
way a repeat would not fix is passed over whatever parameters it would get now, a
read-only workflow is taken instead when the catalog has one, and a workflow whose
own pod never ran may run again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from google.protobuf import json_format

from hapi.v1 import service_pb2
from hapi_grpc.analyst import BuiltinAnalyst
from hapi_grpc.analyst.recovery import RecoveryView
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.engine import InvestigationEngine
from hapi_grpc.domain.result import AnalysisResult
from hapi_grpc.transport import converters
from tests.fakes.investigation import bundled_catalog

EXAMPLES = Path(__file__).parents[2] / "examples"
FAILED = "oomkill-increase-memory-v1"
DIAGNOSTICS = "collect-cluster-diagnostics-v1"


def example(name: str) -> Incident:
    request = json_format.Parse((EXAMPLES / name).read_text(), service_pb2.AnalyzeIncidentRequest())
    return converters.incident_from_proto(request.incident)


async def investigate(incident: Incident) -> AnalysisResult:
    return await InvestigationEngine(bundled_catalog(), BuiltinAnalyst()).investigate(incident)


async def test_a_failed_approach_is_passed_over_and_a_read_only_workflow_taken() -> None:
    # No cluster is read here: the state-changing alternatives have no evidence, the
    # failed one is not repeated, and the read-only diagnostics workflow is taken.
    incident = example("recovery-limitrange.json")
    result = await investigate(incident)
    assert result.selected_workflow is not None
    assert result.selected_workflow.workflow_id == DIAGNOSTICS
    assert not result.needs_human_review
    assert FAILED not in {a.workflow_id for a in result.validation_attempts}
    assessment = result.root_cause_assessment
    assert f"execution 1 ran {FAILED} and failed with FailedCreate" in assessment
    assert f"{FAILED} was executed before (execution 1)" in assessment
    # The same request without the recovery context does not look for a fallback and
    # says nothing of a repeat: the recovery is what made the difference.
    first = await investigate(dataclasses.replace(incident, recovery=None))
    assert first.selected_workflow is None or first.needs_human_review
    assert "was executed before" not in first.root_cause_assessment


def test_the_same_workflow_may_run_again_when_its_own_pod_never_ran() -> None:
    view = RecoveryView.of(example("recovery-runner-imagepull.json"))
    assert view is not None
    assert view.objection(FAILED) is None
    assert "its own pod never ran" in view.history()
    refused = RecoveryView.of(example("recovery-limitrange.json"))
    assert refused is not None and refused.objection(FAILED) is not None
    assert RecoveryView.of(dataclasses.replace(example("oomkilled.json"), recovery=None)) is None
