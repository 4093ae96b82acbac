"""CEL from a Data Storage catalog runs under cost bounds, through the real server.

A real gRPC server reads its catalog from a Data Storage stand-in speaking the
REST contract over HTTP, and its model from a scripted OpenAI-compatible
server. A precondition that grows a string exponentially is refused when the
answer is read (the entry is left out and named in the log; the event loop
never stalls); one that runs past the runtime's iteration budget counts as not
holding for its own workflow, while the rest of the catalog still answers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from hapi.v1 import analysis_pb2
from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.domain.investigation.engine import EngineSettings
from tests.datastorage.conftest import WORKFLOW, FakeDataStorage
from tests.e2e.test_analyze_e2e import GOOD, OOM_ID, analyze, answer, search, validate
from tests.fakes.scripted_llm import ScriptedLLMServer, StepLike
from tests.helpers.grpc_server import running_server

R = analysis_pb2.HumanReviewReason

# The audit's expression: 281 characters, `replace` chained 12 times.
REPLACE_CHAIN = '"aaaa"' + '.replace("a", "aaaa")' * 12 + ' != ""'
ONE_HUNDRED = "[" + ",".join(["0"] * 100) + "]"
TWO_HUNDRED = "[" + ",".join(["0"] * 200) + "]"
# 20,000 iterations: past the runtime's budget of 10,000 per evaluation.
# Ten thousand splits of a 1,200-character constant into as many strings: about a
# second on the event loop per evaluation before `split` was costed per piece.
SPLIT_IN_LOOPS = (
    f'{ONE_HUNDRED}.exists(i, {ONE_HUNDRED}.exists(j, "{"a" * 1200}".split("a").size() == 0))'
)
PAST_THE_BUDGET = f"{ONE_HUNDRED}.all(x, {TWO_HUNDRED}.all(y, y == 0))"


def _workflow(workflow_id: str, expression: str = "") -> dict[str, Any]:
    entry = {**WORKFLOW, "workflow_id": workflow_id}
    if expression:
        entry["preconditions"] = [{"name": "premise", "expression": expression}]
    return entry


class DeclaringDataStorage(FakeDataStorage):
    """The fake Data Storage, whose schemas and hits also carry the declarations."""

    def __init__(self, workflows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.workflows = {w["workflow_id"]: w for w in workflows}
        hits = [
            {k: w[k] for k in ("workflow_id", "version", "title", "description", "signal_type")}
            | {"confidence": 0.9 - 0.01 * i, "preconditions": w.get("preconditions", [])}
            for i, w in enumerate(workflows)
        ]
        self.search_answer = {"workflows": hits, "total_results": len(hits)}

    async def _default(self, request: web.Request) -> web.StreamResponse:
        parts = request.raw_path.split("?", 1)[0].split("/")
        if request.method == "GET" and parts[-1] == "schema" and parts[4] in self.workflows:
            wf = self.workflows[parts[4]]
            keys = ("workflow_id", "version", "parameters", "preconditions")
            return web.json_response({k: wf[k] for k in keys if k in wf})
        return await super()._default(request)


@asynccontextmanager
async def served(workflows: list[dict[str, Any]], script: list[StepLike]) -> AsyncIterator[Any]:
    ds = DeclaringDataStorage(workflows)
    await ds.start()
    catalog = DataStorageCatalog(DataStorageClient(ds.url))
    async with ScriptedLLMServer("openai", script) as llm_server:
        provider = OpenAICompatibleProvider(
            llm_server.base_url, "gpt-test", "sk-test", request_timeout=10, max_retries=0
        )
        try:
            async with running_server(
                catalog=catalog, llm=provider, engine_settings=EngineSettings(tool_timeout=5.0)
            ) as srv:
                yield srv, llm_server
        finally:
            await provider.close()
            await catalog.close()
            await ds.stop()


class Heartbeat:
    """The longest the event loop went without running a 10 ms timer."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _beat(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    async def __aenter__(self) -> Heartbeat:
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def _search_results(llm_server: ScriptedLLMServer) -> str:
    return "\n".join(str(m.get("content")) for r in llm_server.requests for m in r.json["messages"])


@pytest.mark.parametrize("expression", [REPLACE_CHAIN, SPLIT_IN_LOOPS], ids=["replace", "split"])
async def test_an_amplifying_precondition_is_refused_and_the_loop_never_stalls(
    caplog, expression: str
) -> None:
    caplog.set_level(logging.WARNING)
    hostile = "amplifier-v1"
    workflows = [_workflow(hostile, expression), _workflow(OOM_ID)]
    script = [search(), validate(GOOD, hostile), answer(hostile), answer(hostile)]
    async with served(workflows, script) as (srv, llm_server), Heartbeat() as beat:
        results = [await analyze(srv) for _ in range(3)]

    assert beat.longest < 0.25, f"the event loop stalled {beat.longest:.2f} s"
    for result in results:
        assert result.needs_human_review  # the refused workflow is never automated
        assert not result.HasField("selected_workflow") or (
            result.selected_workflow.workflow_id != hostile
        )
    sent = _search_results(llm_server)
    assert OOM_ID in sent  # the rest of the catalog still answers the search
    refused = [r for r in caplog.records if getattr(r, "entry", "").startswith(hostile)]
    assert refused, "the refused entry is named in the log"
    assert "string of" in refused[0].entry or "estimated cost" in refused[0].entry


async def test_a_precondition_past_the_iteration_budget_fails_only_its_workflow() -> None:
    looping = "loops-v1"
    # Its neighbour declares a premise that holds: its premise is not under test.
    workflows = [_workflow(looping, PAST_THE_BUDGET), _workflow(OOM_ID, "true")]
    # The model insists on it after being told its premise does not hold.
    script = [search(), validate(GOOD, looping), answer(looping), answer(looping)]
    async with served(workflows, script) as (srv, _):
        result = await analyze(srv)
        assert result.needs_human_review
        assert result.human_review_reason == R.HUMAN_REVIEW_REASON_PRECONDITION_NOT_MET
        assert "iteration budget exceeded" in " ".join(result.warnings).lower()

    # The same catalog answers a decision for the workflow next to it.
    script = [search(), validate(GOOD), answer()]
    async with served(workflows, script) as (srv, _):
        result = await analyze(srv)
        assert result.human_review_reason != R.HUMAN_REVIEW_REASON_NO_MATCHING_WORKFLOWS
        assert result.selected_workflow.workflow_id == OOM_ID
