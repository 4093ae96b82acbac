"""A RemediationWorkflow's labels as read: one value or a list of them, each value
and the number of values bounded (as the CRDs under deploy/crds declare)."""

from __future__ import annotations

from typing import Any

from hapi_grpc.adapters.catalog.workflow_resources import (
    MAX_LABEL_VALUES,
    LabelSets,
    read_workflow,
)


def _read(labels: dict[str, Any]) -> Any:
    return read_workflow(
        {
            "metadata": {"namespace": "team-a", "name": "raise-memory"},
            "status": {"catalogStatus": "Active"},
            "spec": {"version": "1.0.0", "actionType": "IncreaseMemoryLimits", "labels": labels},
        }
    )


def test_a_single_label_value_is_read_as_a_list_of_one() -> None:
    read = _read({"severity": "Critical", "component": ["apps/v1/Deployment", "pod"]})
    assert read.workflow is not None
    assert read.labels == LabelSets(
        severity=frozenset({"critical"}),
        component=frozenset({"apps/v1/deployment", "deployment", "pod"}),
    )


def test_a_label_value_or_list_past_its_bound_leaves_the_workflow_out() -> None:
    too_long = _read({"environment": ["production", "p" * 254]})
    assert too_long.workflow is None and too_long.problem.startswith("spec.labels.environment")
    too_many = _read({"priority": [f"p{i}" for i in range(MAX_LABEL_VALUES + 1)]})
    assert too_many.workflow is None and too_many.problem.startswith("spec.labels.priority")
    assert _read({"environment": ["p" * 253]}).workflow is not None
