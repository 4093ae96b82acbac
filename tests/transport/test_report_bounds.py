"""Every outcome report is bounded in bytes at the edge, through the real grpc.aio
server: parameter names and values, the parameters in all, the whole report;
a refusal is INVALID_ARGUMENT naming the field and leaves nothing resident
(no reference cycle keeps a refused request until a full garbage collection)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from hapi.v1 import outcome_pb2, service_pb2
from hapi_grpc.domain.tenancy import Tenant
from tests.application.test_report_outcome import TENANT, report, violations
from tests.e2e.test_recovery import recovery_request
from tests.helpers.grpc_server import RunningServer, running_server

PATH = "executed.parameters"
BIG = 3_800_000  # the size an audit sent: 3.84 MB per report


def with_parameters(parameters: dict[str, Any], **overrides: Any) -> Any:
    return report(
        "rr-bounds-1",
        executed={"workflowId": "oomkill-increase-memory-v1", "parameters": parameters},
        **overrides,
    )


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def with_unknown_field(size: int) -> Any:
    """A valid report carrying `size` bytes in field 900, which no version declares."""
    request = report("rr-bounds-1")
    request.MergeFromString(_varint(900 << 3 | 2) + _varint(size) + b"u" * size)
    return request


@pytest.mark.parametrize(
    ("build", "field", "rule"),
    [
        (lambda: with_parameters({"P": "x" * 4097}), f'{PATH}["P"]', "parameters.value_max_len"),
        (lambda: with_parameters({"P": ["x" * 4097]}), f'{PATH}["P"]', "parameters.value_max_len"),
        (lambda: with_parameters({"P" * 254: "1Gi"}), f'{PATH}["{"P" * 64}',
         "parameters.name_max_len"),
        (lambda: with_parameters({f"P{i}": "x" * 300 for i in range(60)}), PATH,
         "parameters.max_bytes"),
        (lambda: with_unknown_field(70_000), "", "request.max_bytes"),
    ],
)  # fmt: skip
async def test_a_report_beyond_its_byte_bounds_is_invalid_argument_with_the_field(
    build: Callable[[], Any], field: str, rule: str
) -> None:
    async with running_server() as srv:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await srv.stub.ReportRemediationOutcome(build(), timeout=10)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        found = violations(error.value)
        assert any(k.startswith(field) and v == rule for k, v in found.items()), found
        assert (await srv.server.history.by_remediation_id("rr-bounds-1", TENANT)).outcomes == ()


async def test_a_report_at_its_bounds_is_kept() -> None:
    # 55 parameters of 280 characters: 16,000 bytes of JSON, under 16 KiB.
    parameters = {f"P{i:02d}": "x" * 280 for i in range(55)}
    async with running_server() as srv:
        ack = await srv.stub.ReportRemediationOutcome(with_parameters(parameters), timeout=10)
        assert not ack.already_recorded
        (entry,) = (await srv.server.history.by_remediation_id("rr-bounds-1", TENANT)).outcomes
        assert entry.parameters == parameters


async def test_a_recovery_request_holds_its_executed_parameters_to_the_same_bounds() -> None:
    request = recovery_request("Forbidden", parameters={"P": "x" * 5000})
    async with running_server() as srv:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await srv.stub.AnalyzeIncident(request, timeout=30)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    path = 'incident.recovery.previous_executions[0].workflow.parameters["P"]'
    assert violations(error.value).get(path) == "parameters.value_max_len"


def _send_big(kind: str) -> Callable[[RunningServer], Any]:
    """A way a 3.8 MB request is refused, as the server's code paths differ."""

    def send(srv: RunningServer) -> Any:
        metadata = (("authorization", "Bearer big-request-token-4e1f"),)
        if kind == "unauthenticated":
            return srv.stub.ReportRemediationOutcome(
                with_parameters({"P": "x" * BIG}), metadata=(("authorization", "Bearer no"),)
            )
        if kind == "proto rule":  # refused by the request's declared rules
            return srv.stub.ReportRemediationOutcome(
                with_parameters({"P": "x" * BIG}, attempt=0), metadata=metadata
            )
        if kind == "not allowed":  # refused by the caller's namespace authorization
            target = {"namespace": "elsewhere", "kind": "Deployment", "name": "api"}
            return srv.stub.ReportRemediationOutcome(
                with_parameters({"P": "x" * BIG}, target=target), metadata=metadata
            )
        if kind == "analysis":
            request = service_pb2.AnalyzeIncidentRequest()
            request.CopyFrom(recovery_request("Forbidden", parameters={"P": "x" * BIG}))
            return srv.stub.AnalyzeIncident(request, metadata=metadata)
        return srv.stub.ReportRemediationOutcome(
            with_parameters({"P": "x" * BIG}), metadata=metadata
        )

    return send


@pytest.mark.parametrize(
    "kind", ["parameter bound", "proto rule", "not allowed", "unauthenticated", "analysis"]
)
async def test_a_refused_request_leaves_nothing_resident(kind: str, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("big-request-token-4e1f\n", encoding="utf-8")
    settings = {
        "auth_mode": "static",
        "auth_tokens_file": str(tokens),
        "auth_static_namespaces": ["payments"],
        "auth_static_report_namespaces": ["payments"],
    }
    send = _send_big(kind)
    async with running_server(**settings) as srv:
        for _ in range(2):  # first calls: lazily built handlers, caches
            with pytest.raises(grpc.aio.AioRpcError):
                await send(srv)
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(20):
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await send(srv)
                assert refused.value.code() != grpc.StatusCode.OK
            grown = tracemalloc.get_traced_memory()[0] - before
            gc.collect()  # what only the cycle collector would have freed
            held = [o for o in gc.garbage if _is_request(o)]
        finally:
            tracemalloc.stop()
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        record = await srv.server.history.by_remediation_id(
            "rr-bounds-1", Tenant("payments", "static-token")
        )
        assert record.outcomes == ()
    assert held == [], f"{len(held)} refused requests (or their bytes) were held by a cycle"
    # Twenty 3.8 MB requests refused with the collector off: no Python object
    # of theirs stays either (76 MB if their text did).
    assert grown < BIG // 4, grown


def _is_request(obj: object) -> bool:
    if isinstance(obj, (bytes, str)):
        return len(obj) > BIG // 2
    return isinstance(
        obj,
        (outcome_pb2.ReportRemediationOutcomeRequest, service_pb2.AnalyzeIncidentRequest),
    )
