"""The shipped policy example loads, and the workflows it names are in the bundled catalog."""

from __future__ import annotations

from pathlib import Path

import yaml

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.remediation_counter import MemoryRemediationCounter
from hapi_grpc.domain.policy.enforce import DecisionPolicy
from hapi_grpc.domain.policy.rules import Action, parse_policy
from tests.domain.policy.helpers import StaticSource, incident, selected

EXAMPLE = Path(__file__).parents[3] / "deploy" / "optional" / "policy.example.yaml"


def example_policy() -> dict[str, object]:
    configmap = yaml.safe_load(EXAMPLE.read_text())
    assert configmap["kind"] == "ConfigMap"
    document: dict[str, object] = yaml.safe_load(configmap["data"]["policy.yaml"])
    return document


async def test_the_example_loads_and_forbids_what_it_says() -> None:
    policy = parse_policy(example_policy())
    forbid = next(r for r in policy.rules if r.action is Action.FORBID)
    catalog = EmbeddedCatalog.from_file(None)
    await catalog.get_workflow("node-drain-reboot-v1")  # raises when it is not there
    result = selected("node-drain-reboot-v1")
    await DecisionPolicy(StaticSource(policy), MemoryRemediationCounter()).apply(
        incident(environment="staging", namespace="infra"), result
    )
    assert result.selected_workflow is None
    assert forbid.name in result.warnings[0]
