"""End-to-end harness for the optional toolsets: the real server, built from Settings.

`serving(script, **settings)` starts a scripted OpenAI-protocol model, opens
the optional toolsets exactly as `hapi-grpc serve` does
(`app.open_toolsets`), builds the real grpc.aio server with them and
yields a `Served` (stub, model server, health). Prometheus and Alertmanager
are the real ones of `tests/toolsets/prometheus/conftest.py` (one per session).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2_grpc

from hapi.v1 import service_pb2, service_pb2_grpc
from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider
from hapi_grpc.app import build_server
from hapi_grpc.client import load_analyze_request
from hapi_grpc.config import Settings
from hapi_grpc.toolsets.registry import open_toolsets
from tests.fakes.scripted_llm import RecordedRequest, ScriptedLLMServer, Step
from tests.toolsets.prometheus.conftest import alertmanager, prometheus  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

ANSWER = {
    "analysis_summary": "memory climbed to the limit",
    "root_cause_assessment": "working set reached the 512Mi limit",
    "rca_severity": "high",
    "selected_workflow": None,
    "warnings": ["test answer"],
}


def final_answer() -> Step:
    return Step.text(json.dumps(ANSWER))


def request(example: str = "oomkilled.json") -> service_pb2.AnalyzeIncidentRequest:
    return load_analyze_request(EXAMPLES / example)


@dataclass
class Served:
    stub: service_pb2_grpc.IncidentAnalysisServiceStub
    health: health_pb2_grpc.HealthStub
    model: ScriptedLLMServer

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.model.requests

    def system_prompt(self, index: int = 0) -> str:
        return str(self.requests[index].json["messages"][0]["content"])

    def offered(self, index: int = 0) -> list[str]:
        return [t["function"]["name"] for t in self.requests[index].json.get("tools") or []]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool message of the last request, decoded."""
        last = self.requests[-1].json["messages"]
        return [json.loads(m["content"]) for m in last if m["role"] == "tool"]


@contextlib.asynccontextmanager
async def serving(script: Sequence[Any], **settings: Any) -> AsyncIterator[Served]:
    config = Settings(grpc_host="127.0.0.1", grpc_port=0, metrics_port=-1, **settings)
    async with ScriptedLLMServer("openai", list(script)) as model:
        llm = OpenAICompatibleProvider(model.base_url, "test-model", "sk-test-0000000000")
        optional = await open_toolsets(config)
        server = build_server(config, llm=llm, toolsets=optional.sources)
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        try:
            yield Served(
                service_pb2_grpc.IncidentAnalysisServiceStub(channel),
                health_pb2_grpc.HealthStub(channel),
                model,
            )
        finally:
            await channel.close()
            await server.stop(0)
            await optional.close()
            await llm.close()


def write_mcp_config(path: Path, servers: dict[str, Any]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)
