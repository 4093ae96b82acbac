"""A real grpc.aio server on 127.0.0.1 for tests, with a real channel to it.

async with running_server(llm=my_provider) as srv:
    response = await srv.stub.AnalyzeIncident(request, timeout=10)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health_pb2_grpc

from hapi.v1 import service_pb2_grpc
from hapi_grpc.app import build_server
from hapi_grpc.config import Settings
from hapi_grpc.domain.catalog import WorkflowCatalog
from hapi_grpc.domain.history import RemediationHistory
from hapi_grpc.domain.investigation.engine import EngineSettings, ToolsetSource
from hapi_grpc.domain.llm import LLMProvider
from hapi_grpc.transport.server import HapiServer


@dataclass
class RunningServer:
    server: HapiServer
    address: str
    channel: grpc.aio.Channel
    stub: service_pb2_grpc.IncidentAnalysisServiceStub
    health: health_pb2_grpc.HealthStub


@contextlib.asynccontextmanager
async def running_server(
    *,
    catalog: WorkflowCatalog | None = None,
    llm: LLMProvider | None = None,
    engine_settings: EngineSettings | None = None,
    extra_interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    toolsets: Sequence[ToolsetSource] = (),
    stop_grace: float = 0.0,
    history: RemediationHistory | None = None,
    **settings: Any,
) -> AsyncIterator[RunningServer]:
    """Start a server on a free loopback port; `settings` override Settings fields,
    `toolsets` are the investigation toolsets offered besides the catalog."""
    config = Settings(**{"grpc_host": "127.0.0.1", "grpc_port": 0, "metrics_port": -1, **settings})
    server = build_server(
        config,
        catalog=catalog,
        llm=llm,
        engine_config=engine_settings,
        extra_interceptors=extra_interceptors,
        toolsets=toolsets,
        history=history,
    )
    await server.start()
    address = f"127.0.0.1:{server.port}"
    channel = grpc.aio.insecure_channel(address)
    try:
        yield RunningServer(
            server=server,
            address=address,
            channel=channel,
            stub=service_pb2_grpc.IncidentAnalysisServiceStub(channel),
            health=health_pb2_grpc.HealthStub(channel),
        )
    finally:
        await channel.close()
        await server.stop(stop_grace)
