"""Struct <-> JSON conversion and the response of ValidateWorkflowParameters."""

from __future__ import annotations

import math
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from hypothesis import given
from hypothesis import strategies as st

from hapi.v1 import incident_pb2, tools_pb2
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.domain import errors
from hapi_grpc.domain.catalog import ParameterSpec, WorkflowSchema
from hapi_grpc.domain.investigation.engine import InvestigationEngine
from hapi_grpc.domain.parameters import validate_parameters
from hapi_grpc.transport.converters import (
    dict_to_struct,
    incident_from_proto,
    result_to_proto,
    struct_to_dict,
    validation_response,
)
from hapi_grpc.transport.stream_messages import event_to_proto as _event_to_proto
from hapi_grpc.transport.tool_arguments import typed_arguments
from tests.fakes.investigation import (
    GOOD_PARAMS,
    ScriptedLLM,
    answer_json,
    make_incident,
    say,
    search,
    validate,
)

# What a Struct can carry: numbers are doubles, keys are strings.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=6)


@given(json_objects)
def test_struct_to_dict_reads_what_protobuf_json_reads(value: dict[str, Any]) -> None:
    struct = struct_pb2.Struct()
    struct.update(value)
    assert struct_to_dict(struct) == json_format.MessageToDict(struct)


@given(json_objects)
def test_round_trip_keeps_every_json_value(value: dict[str, Any]) -> None:
    assert struct_to_dict(dict_to_struct(value)) == value


def test_a_value_without_a_kind_reads_as_null() -> None:
    struct = struct_pb2.Struct()
    struct.fields["EMPTY"].SetInParent()  # a Value with no kind set
    assert struct_to_dict(struct) == {"EMPTY": None}


def test_dict_to_struct_makes_non_json_values_json() -> None:
    out = struct_to_dict(
        dict_to_struct({"nan": math.nan, "inf": -math.inf, "obj": object, "t": (1, "a")})
    )
    assert out["nan"] is None and out["inf"] is None
    assert out["obj"] == str(object)
    assert out["t"] == [1.0, "a"]


SCHEMA = WorkflowSchema(
    workflow_id="mixed-v1",
    version="1.0.0",
    parameters=(
        ParameterSpec(name="NAME", type="string", required=True, pattern="^[a-z]+$"),
        ParameterSpec(name="COUNT", type="integer", minimum=1, maximum=10),
        ParameterSpec(name="RATIO", type="float"),
        ParameterSpec(name="DRY_RUN", type="boolean"),
        ParameterSpec(name="ARGS", type="array"),
    ),
)
proposals = st.dictionaries(
    st.sampled_from(["NAME", "COUNT", "RATIO", "DRY_RUN", "ARGS", "EXTRA"]),
    json_values,
    max_size=6,
)


@given(proposals)
def test_response_sanitized_parameters_are_the_validated_ones(proposal: dict[str, Any]) -> None:
    proposed = dict_to_struct(proposal)
    outcome = validate_parameters(SCHEMA, struct_to_dict(proposed))
    response = validation_response(SCHEMA, outcome, proposed)
    # Whichever way it is built (copied from the request or rebuilt), the
    # response carries exactly what the validator kept.
    assert response.validation.sanitized_parameters == dict_to_struct(outcome.sanitized)
    assert response.validation.HasField("sanitized_parameters")
    assert list(response.validation.stripped_parameters) == list(outcome.stripped)


def test_unchecked_array_items_are_made_json_in_the_response() -> None:
    proposed = struct_pb2.Struct()
    proposed.update({"NAME": "web", "ARGS": [1.0]})
    proposed.fields["ARGS"].list_value.values[0].number_value = math.nan
    outcome = validate_parameters(SCHEMA, struct_to_dict(proposed))
    response = validation_response(SCHEMA, outcome, proposed)
    assert struct_to_dict(response.validation.sanitized_parameters) == {
        "NAME": "web",
        "ARGS": [None],
    }


@pytest.mark.parametrize(("seconds", "nanos"), [(253_402_300_800, 0), (0, -1), (0, 10**9)])
def test_a_timestamp_out_of_range_is_the_callers_mistake_not_a_crash(
    seconds: int, nanos: int
) -> None:
    message = incident_pb2.Incident(remediation_id="r-1")
    message.deduplication.last_seen.seconds = seconds
    message.deduplication.last_seen.nanos = nanos
    with pytest.raises(errors.InvalidRequestError) as err:
        incident_from_proto(message)
    [violation] = err.value.violations
    assert violation.field == "incident.deduplication.last_seen"


async def test_a_result_reusing_its_converted_events_is_the_same_message() -> None:
    # An investigation through the engine gives a result whose tool calls and
    # validation attempts are the same objects as its events.
    events: list[Any] = []

    async def sink(event: Any) -> None:
        events.append(event)

    llm = ScriptedLLM([search(), validate(GOOD_PARAMS), say(answer_json())])
    engine = InvestigationEngine(EmbeddedCatalog.from_file(None), llm)
    result = await engine.investigate(make_incident(), on_event=sink)
    assert result.tool_calls and result.validation_attempts

    converted: dict[int, Any] = {}
    frames = [_event_to_proto(e, converted) for e in events]
    assert len(converted) == len(result.tool_calls) + len(result.validation_attempts)
    reused = result_to_proto(result, converted)
    assert reused == result_to_proto(result)
    assert [f.tool_call for f in frames if f.HasField("tool_call")] == list(reused.tool_calls)


def test_typed_tool_arguments_are_parsed_once_per_distinct_call() -> None:
    arguments = {"query": "OOMKilled critical memory", "limit": 3}
    first = typed_arguments("search_workflow_catalog", arguments)
    assert first == tools_pb2.SearchWorkflowCatalogArgs(query="OOMKilled critical memory", limit=3)
    # An equal call of another investigation (keys in another order) is the same message.
    assert typed_arguments("search_workflow_catalog", dict(reversed(arguments.items()))) is first
    assert typed_arguments("search_workflow_catalog", {"query": "x", "limit": 4}) is not first
    # Arguments that do not fit the message are left untyped, every time.
    assert typed_arguments("search_workflow_catalog", {"limit": "many"}) is None
    assert typed_arguments("search_workflow_catalog", {"limit": "many"}) is None
    # Long arguments are typed every time, not remembered.
    long = {"query": "q" * 4000}
    assert typed_arguments("search_workflow_catalog", long) == typed_arguments(
        "search_workflow_catalog", dict(long)
    )
    assert typed_arguments("search_workflow_catalog", long) is not typed_arguments(
        "search_workflow_catalog", long
    )
