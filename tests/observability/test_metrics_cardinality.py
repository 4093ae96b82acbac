"""Metric series stay bounded, and free of request data, whatever the traffic.

Varied traffic goes through the real server (gRPC in, Data Storage over HTTP
out, the built-in analyst as the model): distinct remediation and incident
ids, free-text error messages, known and unknown workflows, invalid
requests and unknown methods. Two rounds with fresh ids must produce the
same set of series: ids never become label values.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc
from aiohttp import web
from google.protobuf import json_format

from hapi.v1 import service_pb2, validation_pb2
from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.datastorage_server import create_app
from hapi_grpc.observability import metrics
from tests.helpers.grpc_server import RunningServer, running_server

SERIES_LIMIT = 1000
PREFIXES = ("hapi_", "holmesgpt_")
SIGNALS = ("OOMKilled", "CrashLoopBackOff", "ImagePullBackOff", "NodeNotReady", "Unheard-Of")
KNOWN_WORKFLOW = "oomkill-increase-memory-v1"


def _series() -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    found = set()
    for family in metrics.registry.collect():
        if not family.name.startswith(PREFIXES):
            continue
        for sample in family.samples:
            found.add((sample.name, tuple(sorted(sample.labels.items()))))
    return found


@contextlib.asynccontextmanager
async def _data_storage() -> AsyncIterator[str]:
    runner = web.AppRunner(create_app(EmbeddedCatalog.from_file(None)), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def _incident_request(i: int, tag: str) -> tuple[service_pb2.AnalyzeIncidentRequest, list[str]]:
    remediation_id = f"rr-{tag}-{i}-{uuid.uuid4().hex[:8]}"
    incident_id = f"fp-{tag}-{uuid.uuid4().hex[:8]}"
    free_text = f"pod api-{uuid.uuid4().hex[:6]} failed: {uuid.uuid4().hex}"
    body = {
        "incident": {
            "remediationId": remediation_id,
            "incidentId": incident_id,
            "signal": {
                "signalType": SIGNALS[i % len(SIGNALS)],
                "severity": "SEVERITY_CRITICAL",
                "component": "deployment",
                "namespace": f"ns-{tag}-{i}",
                "resourceKind": "Deployment",
                "resourceName": f"app-{tag}-{i}",
            },
            "errorDetails": {"errorMessage": free_text},
        }
    }
    request = json_format.ParseDict(body, service_pb2.AnalyzeIncidentRequest())
    return request, [remediation_id, incident_id, free_text, f"ns-{tag}-{i}", f"app-{tag}-{i}"]


async def _round(srv: RunningServer, tag: str, size: int) -> list[str]:
    """Sends one round of varied traffic; returns the request-supplied strings."""
    supplied: list[str] = []
    calls: list[Awaitable[Any]] = []
    for i in range(size):
        request, strings = _incident_request(i, tag)
        supplied += strings
        if i % 3 == 0:
            calls.append(
                _drain(
                    srv.stub.AnalyzeIncidentStream(
                        service_pb2.AnalyzeIncidentStreamRequest(incident=request.incident),
                        timeout=30,
                    )
                )
            )
        else:
            calls.append(srv.stub.AnalyzeIncident(request, timeout=30))

        unknown = f"wf-{tag}-{i}-{uuid.uuid4().hex[:8]}"
        supplied.append(unknown)
        calls.append(
            srv.stub.ValidateWorkflowParameters(
                validation_pb2.ValidateWorkflowParametersRequest(workflow_id=unknown), timeout=30
            )
        )

        bogus_param = f"PARAM_{tag.upper()}_{i}"
        supplied.append(bogus_param)
        known = validation_pb2.ValidateWorkflowParametersRequest(workflow_id=KNOWN_WORKFLOW)
        known.parameters.update({bogus_param: f"v-{uuid.uuid4().hex}", "NAMESPACE": "Bad Value!"})
        calls.append(srv.stub.ValidateWorkflowParameters(known, timeout=30))

        invalid = service_pb2.AnalyzeIncidentRequest()
        invalid.incident.incident_id = f"bad-{tag}-{i}"  # no remediation id: INVALID_ARGUMENT
        supplied.append(f"bad-{tag}-{i}")
        calls.append(srv.stub.AnalyzeIncident(invalid, timeout=30))

        method = f"/hapi.v1.IncidentAnalysisService/Nope{tag}{i}"
        supplied.append(f"Nope{tag}{i}")
        calls.append(srv.channel.unary_unary(method)(b"", timeout=30))

    # Bounded concurrency: hitting the server's RPC cap would make the set of
    # series depend on timing.
    gate = asyncio.Semaphore(16)

    async def gated(call: Awaitable[Any]) -> Any:
        async with gate:
            return await call

    outcomes = await asyncio.gather(*(gated(c) for c in calls), return_exceptions=True)
    unexpected = [
        o
        for o in outcomes
        if isinstance(o, BaseException) and not isinstance(o, grpc.aio.AioRpcError)
    ]
    assert not unexpected, unexpected[:3]
    codes = {o.code() for o in outcomes if isinstance(o, grpc.aio.AioRpcError)}
    # The traffic really was varied: errors of several kinds, and successes.
    assert {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED} <= codes
    assert any(not isinstance(o, BaseException) for o in outcomes)
    return supplied


async def _drain(call: grpc.aio.UnaryStreamCall) -> int:
    return len([m async for m in call])


async def test_series_stay_bounded_and_never_carry_request_data() -> None:
    # The registry is the process's: series left by tests that ran before are not
    # this traffic's, and which tests run before depends on the selection and order.
    before = _series()
    async with _data_storage() as url, running_server(data_storage_url=url) as srv:
        supplied = await _round(srv, "a", 40)
        after_first = _series()
        supplied += await _round(srv, "b", 40)
        after_second = _series()

    made = after_second - before
    assert len(made) < SERIES_LIMIT, len(made)
    # Fresh ids in round two created no new series.
    assert after_second == after_first, sorted(after_second - after_first)[:10]

    label_values = {v for _, labels in after_second for _, v in labels}
    leaked = [s for s in supplied if any(s in v for v in label_values)]
    assert not leaked, leaked[:5]

    for name, labels in after_second:
        values = dict(labels)
        if "method" in values:
            assert values["method"] in metrics.KNOWN_GRPC_METHODS, (name, values)
        if name.startswith("hapi_grpc_server_handled") and "code" in values:
            assert values["code"] in grpc.StatusCode.__members__, (name, values)

    # The traffic reached the metrics this test is about.
    names = {name for name, _ in after_second}
    assert "hapi_grpc_server_handled_total" in names
    assert "hapi_datastorage_requests_total" in names
    assert "hapi_validation_attempts_total" in names
