"""Caller- and model-controlled names cannot amplify into outcomes or log lines.

An undeclared parameter's name is whatever the caller or the model sent: a
megabyte of it must come back and be logged cut short, saying how much was
cut, and the number of names listed must stay bounded.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from google.protobuf import struct_pb2

from hapi.v1 import validation_pb2
from hapi_grpc.domain import errors
from hapi_grpc.domain.catalog import (
    ParameterSpec,
    SearchQuery,
    SearchResult,
    Workflow,
    WorkflowSchema,
)
from hapi_grpc.domain.parameters import validate_parameters
from hapi_grpc.domain.parameters.limits import (
    LOG_ID_CHARS,
    LOG_NAME_CHARS,
    LOG_NAMES_SHOWN,
    MAX_NAME_CHARS,
    MAX_STRIPPED_NAMES,
)
from tests.helpers.grpc_server import running_server

LOGGER = "hapi_grpc.domain.parameters"
MEGABYTE = 1 << 20
SCHEMA = WorkflowSchema(
    workflow_id="scale-v1",
    version="1.0.0",
    parameters=(ParameterSpec(name="REPLICA_COUNT", type="integer", required=True),),
)


def stripped_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and "Stripped" in r.msg]


def test_megabyte_undeclared_name_is_cut_in_outcome_and_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    name = "N" * MEGABYTE
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outcome = validate_parameters(SCHEMA, {"REPLICA_COUNT": 3, name: "v"}, workflow_id="wf")

    assert outcome.valid
    assert outcome.sanitized == {"REPLICA_COUNT": 3}
    [shown] = outcome.stripped
    assert shown.startswith("N" * MAX_NAME_CHARS)
    assert f"[{MEGABYTE - MAX_NAME_CHARS} more characters cut]" in shown
    assert len(shown) < MAX_NAME_CHARS + 50

    [record] = stripped_records(caplog)
    line = record.getMessage()
    assert len(line) < 300
    assert f"[{MEGABYTE - LOG_NAME_CHARS} more characters cut]" in line
    assert "N" * (LOG_NAME_CHARS + 1) not in line
    # Structured fields go to JSON log lines too: they are cut the same way.
    assert len(repr(record.stripped_parameters)) < 300  # type: ignore[attr-defined]


def test_huge_workflow_id_is_cut_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        validate_parameters(SCHEMA, {"REPLICA_COUNT": 3, "X": 1}, workflow_id="w" * MEGABYTE)
    [record] = stripped_records(caplog)
    line = record.getMessage()
    assert len(line) < 300
    assert f"[{MEGABYTE - LOG_ID_CHARS} more characters cut]" in line
    assert len(record.workflow_id) < 200  # type: ignore[attr-defined]


def test_number_of_names_listed_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    count = 10_000
    proposed: dict[str, Any] = {f"EXTRA_{i:05d}": i for i in range(count)}
    proposed["REPLICA_COUNT"] = 3
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outcome = validate_parameters(SCHEMA, proposed, workflow_id="wf")

    assert outcome.valid
    # The first names in sorted order, whatever order they came in.
    assert outcome.stripped == tuple(f"EXTRA_{i:05d}" for i in range(MAX_STRIPPED_NAMES))
    [record] = stripped_records(caplog)
    line = record.getMessage()
    assert f"Stripped {count} undeclared" in line
    assert f"and {count - LOG_NAMES_SHOWN} more" in line
    assert len(line) < 1000
    assert len(record.stripped_parameters) == LOG_NAMES_SHOWN  # type: ignore[attr-defined]


def test_short_names_are_listed_whole(caplog: pytest.LogCaptureFixture) -> None:
    name = "X" * MAX_NAME_CHARS
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        outcome = validate_parameters(SCHEMA, {"REPLICA_COUNT": 3, name: 1, "B": 2})
    assert outcome.stripped == ("B", name)
    assert "cut" not in outcome.stripped[1]


class OneSchemaCatalog:
    """A catalog port that knows one schema and nothing else."""

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        return SCHEMA.model_copy(update={"workflow_id": workflow_id})

    async def search(self, query: SearchQuery) -> SearchResult:
        return SearchResult()

    async def get_workflow(self, workflow_id: str) -> Workflow:
        raise errors.WorkflowNotFoundError(workflow_id)

    async def close(self) -> None:
        pass


async def test_megabyte_name_over_grpc_comes_back_cut() -> None:
    name = "N" * MEGABYTE
    request = validation_pb2.ValidateWorkflowParametersRequest(workflow_id="scale-v1")
    request.parameters.update({"REPLICA_COUNT": 3})
    request.parameters.fields[name].CopyFrom(struct_pb2.Value(string_value="v"))
    async with running_server(catalog=OneSchemaCatalog()) as srv:
        response = await srv.stub.ValidateWorkflowParameters(request, timeout=20)
    assert response.validation.valid
    [shown] = response.validation.stripped_parameters
    assert shown.endswith(f"[{MEGABYTE - MAX_NAME_CHARS} more characters cut]")
    assert response.ByteSize() < 2_000
