"""The shipped packs cover every standard action type and every bundled workflow; roles
bind by the names this ecosystem uses, by what a workflow states, by mapping, or not at
all; an unverified workflow is named as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from hapi_grpc.adapters.catalog.loader import load_bundled_catalog, load_catalog_file
from hapi_grpc.domain.catalog import ParameterSpec, WorkflowSchema
from hapi_grpc.domain.premises import PackError, bind_roles, bundled_book, parse_packs, role_table
from tests.domain.premises.scenes import oomkilled_statefulset, record, schema, verdict

ROOT = Path(__file__).resolve().parents[3]
# The standard types of the taxonomy (docs/premises.md lists them with their premise).
STANDARD = (
    "ScaleReplicas RestartPod RestartDeployment GracefulRestart IncreaseCPULimits"
    " IncreaseMemoryLimits RollbackDeployment HelmRollback GitRevertCommit ProactiveRollback"
    " DrainNode CordonDrainNode CordonNode CleanupNode CleanupPVC DeletePod PatchHPA RelaxPDB"
    " RemoveTaint ProvisionNode FixCertificate FixNetworkPolicy FixAuthorizationPolicy"
    " FixStatefulSetPVC"
).split()


def test_every_standard_action_type_has_a_pack_with_conditions() -> None:
    book = bundled_book()
    for action_type in STANDARD:
        pack = book.pack(action_type)
        assert pack is not None, action_type
        assert pack.preconditions or pack.invariants, action_type
        assert pack.description, action_type


@pytest.mark.parametrize("source", ["bundled", "deploy", "eval"])
def test_every_shipped_workflow_declares_a_type_that_has_a_pack(source: str) -> None:
    workflows = {
        "bundled": load_bundled_catalog,
        "deploy": lambda: load_catalog_file(ROOT / "deploy" / "catalog.yaml"),
        "eval": lambda: load_catalog_file(
            ROOT / "evals" / "cases" / "oomkilled-gitops-managed" / "catalog.yaml"
        ),
    }[source]()
    book = bundled_book()
    for workflow in workflows:
        assert workflow.action_type, workflow.workflow_id
        # The eval case's own catalog keeps a diagnostics workflow it does not declare
        # read-only: unverified, it goes to review, as it would on a real catalog.
        judged = workflow.read_only or book.pack(workflow.action_type)
        assert judged or (source, workflow.action_type) == ("eval", "CollectDiagnostics")


def test_roles_bind_by_known_names_and_the_target_role() -> None:
    table = role_table()
    binding = bind_roles(
        table,
        ["TARGET_RESOURCE_NAMESPACE", "TARGET_RESOURCE_NAME", "MEMORY_LIMIT_NEW"],
        target="workload",
    )
    assert dict(binding.roles) == {
        "namespace": "TARGET_RESOURCE_NAMESPACE",
        "workload": "TARGET_RESOURCE_NAME",
        "memory_limit": "MEMORY_LIMIT_NEW",
    }
    node = bind_roles(table, ["TARGET_RESOURCE_NAME"], target="node")
    assert dict(node.roles) == {"node": "TARGET_RESOURCE_NAME"}
    deployment = bind_roles(table, ["namespace", "deployment_name"], target="workload")
    assert deployment.view({"namespace": "a", "deployment_name": "b"}) == {
        "namespace": "a",
        "workload": "b",
        "kind": "Deployment",  # the name says it
    }


def test_two_candidates_leave_a_role_unbound_unless_a_mapping_says_which() -> None:
    table = role_table()
    names = ["NAMESPACE", "TARGET_NAMESPACE", "POD_NAME"]
    binding = bind_roles(table, names)
    assert "namespace" not in binding.roles and "namespace" in binding.ambiguous
    mapped = bind_roles(table, names, workflow_mapping={"namespace": "TARGET_NAMESPACE"})
    assert mapped.roles["namespace"] == "TARGET_NAMESPACE"
    unbound = bind_roles(table, names, workflow_mapping={"pod": None})
    assert "pod" not in unbound.roles


def test_a_role_the_workflow_states_wins_over_names() -> None:
    table = role_table()
    binding = bind_roles(
        table,
        ["MEMORY_LIMIT_NEW", "CEILING"],
        declared={"CEILING": "memory_limit"},
    )
    assert binding.roles["memory_limit"] == "CEILING"


def test_an_unknown_type_with_nothing_declared_is_refused_naming_no_premise() -> None:
    veto = verdict(record(), schema("RestartDatabase", "NAMESPACE"), {"NAMESPACE": "a"})
    assert veto is not None
    assert "no premise declared for action type 'RestartDatabase'" in veto.message
    none = verdict(record(), schema("", "NAMESPACE"), {"NAMESPACE": "a"})
    assert none is not None and "declares no action type" in none.message


def test_a_read_only_workflow_is_not_judged_by_a_pack() -> None:
    diagnostics = WorkflowSchema(
        workflow_id="collect-v1", action_type="IncreaseMemoryLimits", read_only=True
    )
    assert verdict(record(), diagnostics, {}) is None


def test_own_declarations_add_to_the_pack() -> None:
    declared = schema("IncreaseMemoryLimits", "NAMESPACE", "STATEFULSET_NAME", "MEMORY_LIMIT_NEW")
    at_most = {
        "name": "at_most_2gi",
        "expression": 'quantity(params.MEMORY_LIMIT_NEW) <= quantity("2Gi")',
    }
    strict = WorkflowSchema.model_validate({**declared.model_dump(), "invariants": [at_most]})
    params = {"NAMESPACE": "shop", "STATEFULSET_NAME": "ledger", "MEMORY_LIMIT_NEW": "4Gi"}
    assert verdict(oomkilled_statefulset(), declared, params) is None
    veto = verdict(oomkilled_statefulset(), strict, params)
    assert veto is not None and "'at_most_2gi'" in veto.message


def test_a_pack_that_does_not_compile_or_repeats_a_name_names_itself() -> None:
    bad = {"packs": [{"action_type": "Foo", "invariants": [{"name": "x", "expression": "1 +"}]}]}
    with pytest.raises(PackError, match=r"pack 'Foo' \(packs\[0\]\): invariants.0.expression"):
        parse_packs(bad, "file.yaml")
    twice = {
        "packs": [
            {"action_type": "Foo", "preconditions": [{"name": "x", "expression": "true"}]},
            {"action_type": "Foo"},
        ]
    }
    with pytest.raises(PackError, match="defined twice"):
        parse_packs(twice, "file.yaml")


def test_parameter_role_is_part_of_the_schema_model() -> None:
    spec = ParameterSpec(name="CEILING", role="memory_limit")
    assert spec.role == "memory_limit"
    with pytest.raises(ValueError):
        ParameterSpec(name="X", role="Not A Role")


def test_the_guide_lists_every_shipped_pack() -> None:
    guide = (ROOT / "docs" / "premises.md").read_text(encoding="utf-8")
    missing = [t for t in bundled_book().action_types if f"| `{t}`" not in guide]
    assert missing == [], f"docs/premises.md does not list {missing}"
