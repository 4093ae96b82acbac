"""Tool definitions: valid JSON Schema, generated from the proto, lenient where models slip."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from hapi_grpc.domain.parameters import ValidationOutcome
from hapi_grpc.domain.result import ValidationSource
from hapi_grpc.domain.sensitive import REDACTED, redact_mapping
from hapi_grpc.domain.toolsets.jsontext import with_notice
from hapi_grpc.domain.toolsets.workflow_catalog.ledger import ValidationLedger
from hapi_grpc.domain.toolsets.workflow_catalog.tools import (
    SEARCH_TOOL,
    TOOL_DEFINITIONS,
    VALIDATE_TOOL,
    SearchWorkflowCatalogArgs,
    ValidateWorkflowParametersArgs,
)

DEFINITIONS = {t.name: t for t in TOOL_DEFINITIONS}


def _walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(n for v in node.values() for n in _walk(v))]
    if isinstance(node, list):
        return [n for v in node for n in _walk(v)]
    return []


def test_exactly_the_two_catalog_tools_are_offered() -> None:
    assert list(DEFINITIONS) == [SEARCH_TOOL, VALIDATE_TOOL]
    for definition in TOOL_DEFINITIONS:
        assert definition.description
        assert len(definition.description) < 300  # every token of it is paid on every turn


@pytest.mark.parametrize("name", [SEARCH_TOOL, VALIDATE_TOOL])
def test_tool_definitions_are_valid_clean_json_schema(name: str) -> None:
    schema = DEFINITIONS[name].parameters
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    for node in _walk(schema):
        assert "title" not in node
        assert "anyOf" not in node  # no `X | null` unions
    assert "description" not in schema  # the tool description is the one the model reads


def test_search_schema_defaults_and_bounds_follow_the_seed() -> None:
    props = DEFINITIONS[SEARCH_TOOL].parameters["properties"]
    assert DEFINITIONS[SEARCH_TOOL].parameters["required"] == ["query"]
    assert props["similarity_threshold"]["default"] == 0.70
    assert (props["similarity_threshold"]["minimum"], props["similarity_threshold"]["maximum"]) == (
        0,
        1,
    )
    assert (props["limit"]["default"], props["limit"]["minimum"], props["limit"]["maximum"]) == (
        5,
        1,
        10,
    )
    assert props["severity"]["enum"] == ["critical", "high", "medium", "low"]
    assert "custom_labels" not in json.dumps(DEFINITIONS[SEARCH_TOOL].parameters)


VALID_SEARCHES = [
    {"query": "OOMKilled critical"},
    {"query": "x", "similarity_threshold": 0, "limit": 10, "severity": "low", "component": "node"},
    {"query": "OOMKilled", "signal_type": "OOMKilled", "similarity_threshold": 1.0, "limit": 1},
]
INVALID_SEARCHES = [
    {},
    {"query": ""},
    {"query": "x" * 513},
    {"query": "q", "limit": 0},
    {"query": "q", "limit": 11},
    {"query": "q", "similarity_threshold": 1.5},
    {"query": "q", "severity": "catastrophic"},
    {"query": "q", "colour": "red"},
    {"query": 5},
    {"query": "q", "signal_type": "s" * 129},
]


@pytest.mark.parametrize("args", VALID_SEARCHES)
def test_schema_and_model_accept_the_same_valid_arguments(args: dict[str, Any]) -> None:
    jsonschema.validate(args, DEFINITIONS[SEARCH_TOOL].parameters)
    SearchWorkflowCatalogArgs.model_validate(args)


@pytest.mark.parametrize("args", INVALID_SEARCHES)
def test_schema_and_model_reject_the_same_invalid_arguments(args: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(args, DEFINITIONS[SEARCH_TOOL].parameters)
    with pytest.raises(ValidationError):
        SearchWorkflowCatalogArgs.model_validate(args)


def test_model_is_lenient_where_models_commonly_slip() -> None:
    args = SearchWorkflowCatalogArgs.model_validate({"query": "q", "severity": "Critical"})
    assert args.severity == "critical"
    assert SearchWorkflowCatalogArgs.model_validate({"query": "q", "severity": ""}).severity is None
    parsed = ValidateWorkflowParametersArgs.model_validate(
        {"workflow_id": "w", "parameters": '{"REPLICA_COUNT": 3}'}
    )
    assert parsed.parameters == {"REPLICA_COUNT": 3}
    with pytest.raises(ValidationError):
        ValidateWorkflowParametersArgs.model_validate({"workflow_id": "w", "parameters": "[1]"})
    defaults = SearchWorkflowCatalogArgs.model_validate({"query": "q"})
    assert (defaults.similarity_threshold, defaults.limit) == (0.70, 5)


def test_with_notice_keeps_the_result_and_adds_the_notice() -> None:
    assert json.loads(with_notice('{"a":1}', "stop")) == {"a": 1, "notice": "stop"}
    assert json.loads(with_notice("plain", "stop")) == {"result": "plain", "notice": "stop"}


def test_recorded_arguments_are_redacted_at_any_depth_and_bounded() -> None:
    params = {
        "NAMESPACE": "prod",
        "API_TOKEN": "t0k3n",
        "nested": {"db_password": "pw", "ok": [{"secret_key": "k"}, 1]},
    }
    assert redact_mapping(params) == {
        "NAMESPACE": "prod",
        "API_TOKEN": REDACTED,
        "nested": {"db_password": REDACTED, "ok": [{"secret_key": REDACTED}, 1]},
    }
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(1000):  # deeper than any sane input; must not recurse without bound
        node["x"] = {}
        node = node["x"]
    assert REDACTED in json.dumps(redact_mapping(deep))


def test_ledger_confirms_only_exactly_what_passed() -> None:
    ledger = ValidationLedger(3)
    outcome = ValidationOutcome(True, (), {"A": 1}, ("EXTRA",))
    ledger.record("w", {"A": 1, "EXTRA": 2}, outcome, ValidationSource.TOOL)
    assert ledger.confirmed("w", {"EXTRA": 2, "A": 1}) is outcome  # key order is irrelevant
    assert ledger.confirmed("w", {"A": 1}) is outcome  # the sanitized form too
    assert ledger.confirmed("w", {"A": 2}) is None
    assert ledger.confirmed("other", {"A": 1}) is None
    assert (ledger.used, ledger.remaining) == (1, 2)
    ledger.charge()
    ledger.charge()
    assert ledger.exhausted
