"""The gRPC surface through a real grpc.aio server and channel: health,
reflection, request validation, error mapping, concurrency cap, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import protovalidate
import pytest
from google.protobuf import descriptor_pb2, json_format
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from hapi.v1 import service_pb2, service_pb2_grpc, validation_pb2
from hapi_grpc.client import error_details, field_violations
from hapi_grpc.domain import errors
from hapi_grpc.domain.catalog import (
    ParameterSpec,
    SearchQuery,
    SearchResult,
    Workflow,
    WorkflowSchema,
)
from hapi_grpc.observability import metrics
from hapi_grpc.transport.interceptors import ServicePolicyInterceptor, request_violations
from hapi_grpc.transport.status import INTERNAL_MESSAGE
from tests.helpers.grpc_server import running_server

SCHEMA = WorkflowSchema(
    workflow_id="scale-v1",
    version="1.0.0",
    parameters=(
        ParameterSpec(name="REPLICA_COUNT", type="integer", required=True, minimum=1, maximum=10),
    ),
)


class ScriptedCatalog:
    """A catalog port double: answers `get_schema` after `delay`, or raises `error`."""

    def __init__(self, *, error: BaseException | None = None, delay: float = 0.0) -> None:
        self.error = error
        self.delay = delay
        self.started = asyncio.Event()
        self.finished = 0

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        self.started.set()
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        self.finished += 1
        return SCHEMA.model_copy(update={"workflow_id": workflow_id})

    async def search(self, query: SearchQuery) -> SearchResult:
        return SearchResult()

    async def get_workflow(self, workflow_id: str) -> Workflow:
        raise errors.WorkflowNotFoundError(workflow_id)

    async def close(self) -> None:
        pass


def validate_request(workflow_id: str = "scale-v1", **params: Any) -> Any:
    request = validation_pb2.ValidateWorkflowParametersRequest(workflow_id=workflow_id)
    request.parameters.update(params or {"REPLICA_COUNT": 3})
    return request


async def test_health_serving_after_start_and_not_serving_on_shutdown() -> None:
    async with running_server(catalog=ScriptedCatalog()) as srv:
        for service in ("", "hapi.v1.IncidentAnalysisService"):
            reply = await srv.health.Check(health_pb2.HealthCheckRequest(service=service))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await srv.health.Check(health_pb2.HealthCheckRequest(service="nope.v1.Nothing"))
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

        watch = srv.health.Watch(health_pb2.HealthCheckRequest(service=""))
        first = await watch.read()
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        stopping = srv.server.stop(grace=1.0)
        second = await asyncio.wait_for(watch.read(), timeout=5)
        assert second.status == health_pb2.HealthCheckResponse.NOT_SERVING
        watch.cancel()
        await stopping
        # Once stopped, nothing can flip it back.
        await srv.server.health.set("", health_pb2.HealthCheckResponse.SERVING)
        check = await srv.server.health.Check(health_pb2.HealthCheckRequest(service=""), None)
        assert check.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_reflection_lists_services_and_serves_descriptors() -> None:
    async with running_server(catalog=ScriptedCatalog()) as srv:
        stub = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="hapi.v1.IncidentAnalysisService"
            ),
        ]
        replies = [reply async for reply in stub.ServerReflectionInfo(iter(requests))]
        names = {s.name for s in replies[0].list_services_response.service}
        assert {"hapi.v1.IncidentAnalysisService", "grpc.health.v1.Health"} <= names
        files = [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in replies[1].file_descriptor_response.file_descriptor_proto
        ]
        service_file = next(f for f in files if f.name == "hapi/v1/service.proto")
        comments = [loc.leading_comments for loc in service_file.source_code_info.location]
        assert any("validated remediation decision" in c for c in comments)
        # Dependencies travel too, so a client can resolve every type.
        assert {"hapi/v1/incident.proto", "google/protobuf/struct.proto"} <= {f.name for f in files}


async def test_reflection_resolves_method_symbols() -> None:
    async with running_server(catalog=ScriptedCatalog()) as srv:
        stub = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="hapi.v1.IncidentAnalysisService.AnalyzeIncident"
            ),
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="hapi.v1.IncidentAnalysisService.NoSuchMethod"
            ),
        ]
        found, missing = [reply async for reply in stub.ServerReflectionInfo(iter(requests))]
        assert found.file_descriptor_response.file_descriptor_proto
        assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


async def test_reflection_can_be_switched_off() -> None:
    async with running_server(catalog=ScriptedCatalog(), reflection=False) as srv:
        stub = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        call = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            [reply async for reply in call]
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_invalid_request_gets_field_violations() -> None:
    async with running_server(catalog=ScriptedCatalog()) as srv:
        request = json_format.ParseDict(
            {"incident": {"remediationId": "", "signal": {"signalType": "OOMKilled"}}},
            service_pb2.AnalyzeIncidentRequest(),
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.AnalyzeIncident(request, timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        violations = field_violations(err.value)
        assert [v.field for v in violations] == ["incident.remediation_id"]
        assert violations[0].rule_id == "required"
        assert "remediation_id" in err.value.details()


@pytest.mark.parametrize(
    ("request_json", "field"),
    [
        ({}, "incident"),
        ({"incident": {"remediationId": "r-1"}}, "incident.signal"),
        (
            {
                "incident": {
                    "remediationId": "r-1",
                    "signal": {"signalType": "X"},
                    "errorDetails": {"description": "d" * 20000},
                }
            },
            "incident.error_details.description",
        ),
        (
            {"incident": {"remediationId": "r-1", "signal": {"signalType": "X", "severity": 42}}},
            "incident.signal.severity",
        ),
        (
            {
                "incident": {
                    "remediationId": "r-1",
                    "signal": {"signalType": "X"},
                    "enrichmentResults": {"customLabels": {"team": ["a", 7]}},
                }
            },
            "incident.enrichment_results",
        ),
    ],
)
async def test_request_rules_from_the_proto(request_json: dict[str, Any], field: str) -> None:
    async with running_server(catalog=ScriptedCatalog()) as srv:
        request = json_format.ParseDict(request_json, service_pb2.AnalyzeIncidentRequest())
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.AnalyzeIncident(request, timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert field in [v.field for v in field_violations(err.value)]


@pytest.mark.parametrize("workflow_id", ["../../admin", "a?b", "a#b", "", "x" * 200])
async def test_unsafe_workflow_ids_are_invalid_argument(workflow_id: str) -> None:
    catalog = ScriptedCatalog()
    async with running_server(catalog=catalog) as srv:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.ValidateWorkflowParameters(validate_request(workflow_id), timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert field_violations(err.value)[0].field == "workflow_id"
        assert not catalog.started.is_set()  # never reached the catalog


@pytest.mark.parametrize(("count", "accepted"), [(64, True), (65, False)])
async def test_at_most_64_parameters_are_accepted(count: int, accepted: bool) -> None:
    catalog = ScriptedCatalog()
    request = validate_request()
    request.parameters.update({f"P{i}": i for i in range(count - 1)})
    assert len(request.parameters) == count
    async with running_server(catalog=catalog) as srv:
        if accepted:
            response = await srv.stub.ValidateWorkflowParameters(request, timeout=10)
            assert response.validation.valid  # the 63 extras are stripped, not errors
            assert len(response.validation.stripped_parameters) == count - 1
            return
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.ValidateWorkflowParameters(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    [violation] = field_violations(err.value)
    assert (violation.field, violation.rule_id) == ("parameters", "parameters.max_fields")
    assert "65 parameters" in err.value.details()
    assert not catalog.started.is_set()


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.WorkflowNotFoundError("scale-v1"), grpc.StatusCode.NOT_FOUND),
        (errors.CatalogUnavailableError("Data Storage unreachable"), grpc.StatusCode.UNAVAILABLE),
        (errors.CatalogContractError("search response: not JSON"), grpc.StatusCode.UNAVAILABLE),
        (errors.BudgetExhaustedError("no time left"), grpc.StatusCode.DEADLINE_EXCEEDED),
        (errors.ResourceExhaustedError("quota"), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (
            errors.InvalidRequestError("bad", [errors.FieldViolation("workflow_id", "bad id")]),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ],
)
async def test_domain_errors_map_to_status_codes(error: Exception, code: grpc.StatusCode) -> None:
    async with running_server(catalog=ScriptedCatalog(error=error)) as srv:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.ValidateWorkflowParameters(validate_request(), timeout=10)
        assert err.value.code() == code
        assert err.value.details() == str(error)
        if isinstance(error, errors.WorkflowNotFoundError):
            [info] = error_details(err.value)
            assert isinstance(info, error_details_pb2.ResourceInfo)
            assert info.resource_name == "scale-v1"


async def test_unexpected_exception_is_internal_and_leaks_nothing(caplog: Any) -> None:
    boom = RuntimeError("secret internals: password=hunter2")
    async with running_server(catalog=ScriptedCatalog(error=boom)) as srv:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.ValidateWorkflowParameters(validate_request(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INTERNAL
    assert err.value.details() == INTERNAL_MESSAGE
    assert "hunter2" not in str(err.value)
    assert any(r.exc_info and r.exc_info[1] is boom for r in caplog.records)


def _sample(name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_concurrency_cap_answers_resource_exhausted_but_not_for_health() -> None:
    """Also checks the RPC metrics around it: in-flight calls and final codes."""
    method = {"method": "ValidateWorkflowParameters"}
    refused = {**method, "code": "RESOURCE_EXHAUSTED"}
    refused_before = _sample("hapi_grpc_server_handled_total", **refused)
    ok_before = _sample("hapi_grpc_server_handled_total", **method, code="OK")
    catalog = ScriptedCatalog(delay=1.0)
    async with running_server(catalog=catalog, max_concurrent_rpcs=2) as srv:
        calls = [
            asyncio.ensure_future(
                srv.stub.ValidateWorkflowParameters(validate_request(), timeout=10)
            )
            for _ in range(2)
        ]
        await asyncio.wait_for(catalog.started.wait(), 5)
        await asyncio.sleep(0.1)
        assert _sample("hapi_grpc_server_in_flight", **method) == 2
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.ValidateWorkflowParameters(validate_request(), timeout=10)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _retry_delay(err.value) == 1.0
        assert _sample("hapi_grpc_server_in_flight", **method) == 2  # the refused one is done
        health = await srv.health.Check(health_pb2.HealthCheckRequest(service=""))
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        replies = await asyncio.gather(*calls)
        assert all(r.validation.valid for r in replies)
        assert _sample("hapi_grpc_server_in_flight", **method) == 0
        # Capacity is released: a new call succeeds.
        reply = await srv.stub.ValidateWorkflowParameters(validate_request(), timeout=10)
        assert reply.validation.valid
    assert _sample("hapi_grpc_server_handled_total", **refused) == refused_before + 1
    assert _sample("hapi_grpc_server_handled_total", **method, code="OK") == ok_before + 3


async def test_graceful_shutdown_lets_in_flight_call_finish_and_refuses_new_ones() -> None:
    catalog = ScriptedCatalog(delay=0.5)
    async with running_server(catalog=catalog) as srv:
        in_flight = asyncio.ensure_future(
            srv.stub.ValidateWorkflowParameters(validate_request(), timeout=10)
        )
        await asyncio.wait_for(catalog.started.wait(), 5)
        stopping = srv.server.stop(grace=5.0)
        await asyncio.sleep(0.05)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await srv.stub.ValidateWorkflowParameters(validate_request(), timeout=2)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        reply = await in_flight
        assert reply.validation.valid
        await stopping
        assert catalog.finished == 1


async def test_shutdown_grace_cancels_calls_that_outlive_it() -> None:
    catalog = ScriptedCatalog(delay=30)
    async with running_server(catalog=catalog) as srv:
        in_flight = asyncio.ensure_future(
            srv.stub.ValidateWorkflowParameters(validate_request(), timeout=60)
        )
        await asyncio.wait_for(catalog.started.wait(), 5)
        await asyncio.wait_for(srv.server.stop(grace=0.2), 5)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await in_flight
        assert err.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


def _retry_delay(error: grpc.aio.AioRpcError) -> float | None:
    """Seconds of the google.rpc.RetryInfo carried by a failed call, if any."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                    info = error_details_pb2.RetryInfo()
                    detail.Unpack(info)
                    return info.retry_delay.ToTimedelta().total_seconds()
    return None


# --- The concurrency slot is released on every path -------------------------------


class FlakyValidator:
    """protovalidate's validator, raising `error` on its first `failures` calls."""

    def __init__(self, error: Exception, failures: int) -> None:
        self.error = error
        self.failures = failures
        self.real = protovalidate.Validator()

    def collect_violations(self, message: Any, **kwargs: Any) -> Any:
        if self.failures > 0:
            self.failures -= 1
            raise self.error
        return self.real.collect_violations(message, **kwargs)


class MinimalServicer(service_pb2_grpc.IncidentAnalysisServiceServicer):
    """Answers ValidateWorkflowParameters at once; streams until the caller leaves;
    AnalyzeIncident fails with an unexpected error."""

    def __init__(self) -> None:
        self.streaming = asyncio.Event()

    async def ValidateWorkflowParameters(self, request: Any, context: Any) -> Any:
        return validation_pb2.ValidateWorkflowParametersResponse(workflow_id=request.workflow_id)

    async def AnalyzeIncidentStream(self, request: Any, context: Any) -> Any:
        while True:
            yield service_pb2.AnalyzeIncidentStreamResponse()
            self.streaming.set()
            await asyncio.sleep(0.01)

    async def AnalyzeIncident(self, request: Any, context: Any) -> Any:
        raise RuntimeError("handler failed")


@contextlib.asynccontextmanager
async def policy_server(
    interceptor: ServicePolicyInterceptor, servicer: MinimalServicer
) -> AsyncIterator[grpc.aio.Channel]:
    """A real grpc.aio server with only the policy interceptor, and a channel to it."""
    server = grpc.aio.server(interceptors=[interceptor])
    service_pb2_grpc.add_IncidentAnalysisServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield channel
    finally:
        await channel.close()
        await server.stop(0)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (
            protovalidate.EvaluationError("error evaluating x: Iteration budget exceeded"),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (RuntimeError("validator bug"), grpc.StatusCode.INTERNAL),
    ],
)
async def test_validator_errors_never_leak_a_concurrency_slot(
    error: Exception, code: grpc.StatusCode
) -> None:
    interceptor = ServicePolicyInterceptor(5, validator=FlakyValidator(error, 200))  # type: ignore[arg-type]
    async with policy_server(interceptor, MinimalServicer()) as channel:
        stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
        for _ in range(200):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.ValidateWorkflowParameters(validate_request(), timeout=10)
            assert err.value.code() == code
        # The caller may see the status before the server's handler has unwound
        # and released its slot: wait for that, briefly, instead of racing it.
        for _ in range(100):
            if interceptor.concurrency.in_flight == 0:
                break
            await asyncio.sleep(0.02)
        assert interceptor.concurrency.in_flight == 0
        reply = await stub.ValidateWorkflowParameters(validate_request(), timeout=10)
        assert reply.workflow_id == "scale-v1"
    assert interceptor.concurrency.in_flight == 0


async def test_slot_released_after_handler_error_cancellation_and_stream_closed_early() -> None:
    interceptor = ServicePolicyInterceptor(1)
    servicer = MinimalServicer()
    incident = {"incident": {"remediationId": "r-1", "signal": {"signalType": "X"}}}
    async with policy_server(interceptor, servicer) as channel:
        stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
        request = json_format.ParseDict(incident, service_pb2.AnalyzeIncidentRequest())
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.AnalyzeIncident(request, timeout=10)
        assert err.value.code() == grpc.StatusCode.INTERNAL
        assert interceptor.concurrency.in_flight == 0

        stream_request = json_format.ParseDict(incident, service_pb2.AnalyzeIncidentStreamRequest())
        call = stub.AnalyzeIncidentStream(stream_request, timeout=10)
        await call.read()
        assert interceptor.concurrency.in_flight == 1
        call.cancel()  # the caller leaves: the server closes the generator early
        for _ in range(100):
            if interceptor.concurrency.in_flight == 0:
                break
            await asyncio.sleep(0.02)
        assert interceptor.concurrency.in_flight == 0
        # The single slot is free again.
        reply = await stub.ValidateWorkflowParameters(validate_request(), timeout=10)
        assert reply.workflow_id == "scale-v1"


def test_an_evaluation_error_names_the_field_whose_rule_gave_up() -> None:
    error = protovalidate.EvaluationError(
        "error evaluating custom_labels.values: Iteration budget exceeded"
    )
    request = json_format.ParseDict(
        {"incident": {"remediationId": "r-1", "signal": {"signalType": "X"}}},
        service_pb2.AnalyzeIncidentRequest(),
    )
    [violation] = request_violations(request, FlakyValidator(error, 1))  # type: ignore[arg-type]
    assert (violation.field, violation.rule_id) == (
        "incident.enrichment_results",
        "custom_labels.values",
    )


# --- Undecodable, oversized and out-of-range requests ------------------------------

UNDECODABLE = [b"\xff\xff\xff\xff", b"\x0a\x04hx-\xff", b"\x0a\x7fshort", b"\x08"]


@pytest.mark.parametrize(
    ("method", "message"),
    [
        ("ValidateWorkflowParameters", "hapi.v1.ValidateWorkflowParametersRequest"),
        ("AnalyzeIncident", "hapi.v1.AnalyzeIncidentRequest"),
        ("AnalyzeIncidentStream", "hapi.v1.AnalyzeIncidentStreamRequest"),
    ],
)
async def test_undecodable_bytes_are_invalid_argument_logged_once_and_counted(
    method: str, message: str, caplog: Any
) -> None:
    labels = {"method": method, "code": "INVALID_ARGUMENT"}
    before = _sample("hapi_grpc_server_handled_total", **labels)
    path = f"/hapi.v1.IncidentAnalysisService/{method}"
    async with running_server(catalog=ScriptedCatalog()) as srv:
        if method == "AnalyzeIncidentStream":
            call: Any = srv.channel.unary_stream(path)
        else:
            call = srv.channel.unary_unary(path)
        for payload in UNDECODABLE:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                reply = call(payload, timeout=10)
                if method == "AnalyzeIncidentStream":
                    [m async for m in reply]
                else:
                    await reply
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.value.details() == f"request is not a valid {message} message"
    assert _sample("hapi_grpc_server_handled_total", **labels) == before + len(UNDECODABLE)
    warnings = [r for r in caplog.records if "undecodable" in r.getMessage()]
    assert len(warnings) == 1  # throttled: one line for the burst
    assert warnings[0].levelno == logging.WARNING and warnings[0].exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def _incident(**sections: Any) -> service_pb2.AnalyzeIncidentRequest:
    request = service_pb2.AnalyzeIncidentRequest()
    request.incident.remediation_id = "r-1"
    request.incident.signal.signal_type = "X"
    for name, fill in sections.items():
        fill(getattr(request.incident, name))
    return request


def _custom(keys: int, values: int) -> Any:
    def fill(enrichment: Any) -> None:
        for i in range(keys):
            enrichment.custom_labels[f"k{i}"].extend(["v"] * values)

    return fill


def _labels(count: int) -> Any:
    def fill(cluster: Any) -> None:
        for i in range(count):
            cluster.signal_labels[f"k{i}"] = "v"

    return fill


@pytest.mark.parametrize(
    ("sections", "field", "rule_id", "text"),
    [
        (
            {"enrichment_results": _custom(10_000, 1)},
            "incident.enrichment_results.custom_labels",
            "map.max_pairs",
            "map must be at most 32 entries",
        ),
        (
            {"enrichment_results": _custom(700, 16)},
            "incident.enrichment_results.custom_labels",
            "map.max_pairs",
            "map must be at most 32 entries",
        ),
        (
            {"enrichment_results": _custom(1, 100_000)},
            'incident.enrichment_results.custom_labels["k0"]',
            "json.max_values",
            "at most 1024 JSON values",
        ),
        (
            {"cluster": _labels(50_000)},
            "incident.cluster.signal_labels",
            "map.max_pairs",
            "map must be at most 64 entries",
        ),
    ],
)
async def test_oversized_collections_answer_the_declared_rule_at_once(
    sections: dict[str, Any], field: str, rule_id: str, text: str
) -> None:
    async with running_server(catalog=ScriptedCatalog()) as srv:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.AnalyzeIncident(_incident(**sections), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    [violation] = field_violations(err.value)
    assert (violation.field, violation.rule_id) == (field, rule_id)
    assert text in violation.description


def _stamp(section: str, name: str, seconds: int, nanos: int) -> dict[str, Any]:
    def fill(message: Any) -> None:
        stamp = getattr(message, name)
        stamp.seconds, stamp.nanos = seconds, nanos

    return {section: fill}


@pytest.mark.parametrize(
    ("section", "name"),
    [
        ("error_details", "firing_time"),
        ("error_details", "received_time"),
        ("deduplication", "first_seen"),
        ("deduplication", "last_seen"),
    ],
)
@pytest.mark.parametrize(
    ("seconds", "nanos", "rule_id"),
    [
        (253_402_300_800, 0, "timestamp.gte_lte"),
        (-62_135_596_801, 0, "timestamp.gte_lte"),
        (2**62, 0, "timestamp.gte_lte"),
        (0, -1, "timestamp.nanos"),
        (0, 1_000_000_000, "timestamp.nanos"),
    ],
)
async def test_out_of_range_timestamps_are_field_violations(
    section: str, name: str, seconds: int, nanos: int, rule_id: str
) -> None:
    async with running_server(catalog=ScriptedCatalog()) as srv:
        request = _incident(**_stamp(section, name, seconds, nanos))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await srv.stub.AnalyzeIncident(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    [violation] = field_violations(err.value)
    assert (violation.field, violation.rule_id) == (f"incident.{section}.{name}", rule_id)
