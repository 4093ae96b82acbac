"""The action type of Data Storage's workflows, over real HTTP: read from its
`action_type` field in search results, schemas and records, kept as given
(an operator's own type too), empty when Data Storage sends none; and what a
model reads of it through the real server ("unknown" when there is none)."""

from __future__ import annotations

import json
from typing import Any

from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.catalog import SearchQuery
from tests.datastorage.conftest import WORKFLOW, WORKFLOW_ID, FakeDataStorage, search_payload
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, last_tool_result
from tests.helpers.grpc_server import running_server
from tests.policy.test_grpc import request

OPERATOR_TYPE = "DrainAndReimageNode"  # not in the standard taxonomy: allowed as it is


def typed(ds: FakeDataStorage, action_type: str | None) -> None:
    """Data Storage answering with `action_type` on every shape (absent when None)."""
    record = dict(WORKFLOW)
    answer = search_payload()
    if action_type is not None:
        record["action_type"] = action_type
        answer["workflows"][0]["action_type"] = action_type
    ds.workflows = {WORKFLOW_ID: record}
    ds.search_answer = answer
    schema = {k: record[k] for k in ("workflow_id", "version", "parameters", "action_type")
              if k in record}  # fmt: skip
    ds.script("schema", ds.ok(schema))


async def test_the_action_type_is_read_from_every_answer(ds: FakeDataStorage) -> None:
    typed(ds, "IncreaseMemoryLimits")
    catalog = DataStorageCatalog(DataStorageClient(ds.url))
    try:
        (hit,) = (await catalog.search(SearchQuery(query="OOMKilled critical"))).workflows
        schema = await catalog.get_schema(WORKFLOW_ID)
        record = await catalog.get_workflow(WORKFLOW_ID)
    finally:
        await catalog.close()
    assert hit.action_type == schema.action_type == record.action_type == "IncreaseMemoryLimits"


async def test_an_operators_own_type_and_a_missing_one_are_kept_as_given(
    ds: FakeDataStorage,
) -> None:
    for given, expected in ((OPERATOR_TYPE, OPERATOR_TYPE), (None, "")):
        typed(ds, given)
        catalog = DataStorageCatalog(DataStorageClient(ds.url))
        try:
            (hit,) = (await catalog.search(SearchQuery(query="OOMKilled critical"))).workflows
            schema = await catalog.get_schema(WORKFLOW_ID)
        finally:
            await catalog.close()
        assert hit.action_type == schema.action_type == expected


async def model_sees(ds: FakeDataStorage) -> dict[str, Any]:
    search = Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})])
    async with ScriptedLLMServer("openai", [search, Step.text("{}")] * 2) as llm:
        provider = OpenAICompatibleProvider(
            llm.base_url, "gpt-test", "sk-test-key-123", request_timeout=10, max_retries=0
        )
        try:
            async with running_server(data_storage_url=ds.url, llm=provider) as server:
                await server.stub.AnalyzeIncident(request("rr-typed"), timeout=20)
        finally:
            await provider.close()
    (hit,) = json.loads(last_tool_result(llm.requests[1].json))["workflows"]
    return dict(hit)


async def test_the_model_reads_the_type_or_unknown(ds: FakeDataStorage) -> None:
    typed(ds, OPERATOR_TYPE)
    assert (await model_sees(ds))["action_type"] == OPERATOR_TYPE
    typed(ds, None)
    assert (await model_sees(ds))["action_type"] == "unknown"
