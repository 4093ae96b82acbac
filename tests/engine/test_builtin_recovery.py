"""The built-in analyst in a recovery: it does not repeat a failed approach.

Decided from the prompt's recovery sections and the catalog's declarations:
a workflow whose execution failed in a way a repeat would not fix is passed
over whatever parameters it would get now, a read-only workflow is taken
instead when the catalog has one, and a workflow whose own pod never ran may
run again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from google.protobuf import json_format

from hapi.v1 import service_pb2
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.llm.builtin import BuiltinAnalyst
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.engine import InvestigationEngine
from hapi_grpc.domain.result import AnalysisResult
from hapi_grpc.transport import converters
from tests.fakes.investigation import bundled_catalog

EXAMPLES = Path(__file__).parents[2] / "examples"
FAILED = "oomkill-increase-memory-v1"
DIAGNOSTICS = "collect-cluster-diagnostics-v1"
# Premises left out and every workflow declared read-only: without cluster tools,
# only the recovery rules decide what is selected.
_UNDECLARED = EmbeddedCatalog(
    [
        w.model_copy(update={"preconditions": (), "invariants": (), "read_only": True})
        for w in bundled_catalog().workflows
    ]
)


def example(name: str) -> Incident:
    request = json_format.Parse((EXAMPLES / name).read_text(), service_pb2.AnalyzeIncidentRequest())
    return converters.incident_from_proto(request.incident)


async def investigate(incident: Incident, catalog: EmbeddedCatalog) -> AnalysisResult:
    return await InvestigationEngine(catalog, BuiltinAnalyst()).investigate(incident)


async def test_a_failed_approach_is_passed_over_for_another_workflow() -> None:
    incident = example("recovery-limitrange.json")
    result = await investigate(incident, _UNDECLARED)
    assert result.selected_workflow is not None
    assert result.selected_workflow.workflow_id != FAILED
    validated = {a.workflow_id for a in result.validation_attempts}
    assert FAILED not in validated  # not even proposed
    assert f"execution 1 ran {FAILED} and failed with FailedCreate" in (
        result.root_cause_assessment
    )
    # The same request without the recovery context selects the failed workflow:
    # the recovery is what made the difference.
    first = await investigate(dataclasses.replace(incident, recovery=None), _UNDECLARED)
    assert first.selected_workflow is not None and first.selected_workflow.workflow_id == FAILED


async def test_with_declared_premises_it_falls_back_to_a_read_only_workflow() -> None:
    # No cluster was read: the state-changing alternatives have no evidence, the
    # failed one is not repeated, and the read-only diagnostics workflow is taken.
    result = await investigate(example("recovery-limitrange.json"), bundled_catalog())
    assert result.selected_workflow is not None
    assert result.selected_workflow.workflow_id == DIAGNOSTICS
    assert not result.needs_human_review


async def test_the_same_workflow_runs_again_when_its_own_pod_never_ran() -> None:
    result = await investigate(example("recovery-runner-imagepull.json"), _UNDECLARED)
    assert result.selected_workflow is not None
    assert result.selected_workflow.workflow_id == FAILED
    # Exactly what was executed before, and the service lets it through.
    assert result.selected_workflow.parameters["MEMORY_LIMIT_NEW"] == "1Gi"
    assert not result.needs_human_review
    assert "its own pod never ran" in result.root_cause_assessment
