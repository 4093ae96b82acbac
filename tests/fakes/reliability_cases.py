"""Requests for the reliability suite: valid ones, boundary ones and hostile bytes.

Everything is produced as serialized bytes for a method path, because the suite
sends raw bytes (`channel.unary_unary(method)` without serializer) so that it
can also send what no protobuf library would produce. Every valid incident gets
a fresh `remediation_id` so that calls never reuse one by accident.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
from google.protobuf import struct_pb2, timestamp_pb2

from hapi.v1 import common_pb2, incident_pb2, service_pb2, validation_pb2
from tests.fakes.wire import (
    ANALYZE,
    METHODS,
    STREAM,
    VALIDATE,
    nested_list,
    nested_struct,
)
from tests.fakes.wire import length_delimited as _field
from tests.fakes.wire import varint as _varint

__all__ = ["ANALYZE", "METHODS", "STREAM", "VALIDATE"]

# A ListValue holding one string: the innermost level of `nested_list` here.
_STRING_LIST = _field(1, _field(3, b"x"))  # values: [string_value "x"]

OK = grpc.StatusCode.OK
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
# What a request the caller got wrong (or right) may answer; never UNKNOWN/INTERNAL.
INPUT_CODES = frozenset({OK, INVALID, NOT_FOUND})

_ids = itertools.count()


def fresh_id(prefix: str = "rr-rel") -> str:
    return f"{prefix}-{next(_ids)}-{random.getrandbits(32):08x}"


def incident(remediation_id: str | None = None) -> incident_pb2.Incident:
    """A complete, valid OOMKilled incident (every section filled)."""
    message = incident_pb2.Incident(
        remediation_id=remediation_id or fresh_id(),
        incident_id="fp-3c9e1d0b",
        signal=incident_pb2.SignalInfo(
            signal_type="OOMKilled",
            severity=common_pb2.SEVERITY_CRITICAL,
            component="deployment",
            alert_name="KubePodOOMKilled",
            namespace="payments",
            resource_kind="Deployment",
            resource_name="payment-api",
        ),
        error_details=incident_pb2.ErrorDetails(
            error_message="Container payment-api was OOMKilled (exit code 137)",
            description="3 containers were killed for exceeding their memory limit",
            firing_time=timestamp_pb2.Timestamp(seconds=1795335123),
            received_time=timestamp_pb2.Timestamp(seconds=1795335125),
        ),
        deduplication=incident_pb2.DeduplicationContext(
            is_duplicate=True,
            first_seen=timestamp_pb2.Timestamp(seconds=1795333200),
            last_seen=timestamp_pb2.Timestamp(seconds=1795335123),
            occurrence_count=4,
        ),
        cluster=incident_pb2.ClusterContext(
            cluster_name="prod-eu-west-1",
            signal_source="prometheus-adapter",
            signal_labels={"container": "payment-api", "pod": "payment-api-6d9f7c5b8-x2k4q"},
        ),
        business=incident_pb2.BusinessContext(
            environment="production",
            priority="P0",
            business_category="payment-service",
            risk_tolerance=common_pb2.RISK_LEVEL_LOW,
        ),
    )
    labels = message.enrichment_results.custom_labels
    labels["constraint"].values.add(string_value="cost-constrained")
    labels["team"].values.add(string_value="name=payments")
    message.enrichment_results.detected_labels.update({"gitOpsManaged": False})
    return message


def analyze(message: incident_pb2.Incident | None = None) -> bytes:
    return service_pb2.AnalyzeIncidentRequest(incident=message or incident()).SerializeToString()


def analyze_stream(message: incident_pb2.Incident | None = None) -> bytes:
    request = service_pb2.AnalyzeIncidentStreamRequest(incident=message or incident())
    return request.SerializeToString()


GOOD_PARAMETERS = {
    "NAMESPACE": "payments",
    "DEPLOYMENT_NAME": "payment-api",
    "MEMORY_LIMIT_NEW": "1Gi",
}


def validate(
    workflow_id: str = "oomkill-increase-memory-v1", parameters: dict[str, object] | None = None
) -> bytes:
    params = struct_pb2.Struct()
    params.update(GOOD_PARAMETERS if parameters is None else parameters)
    request = validation_pb2.ValidateWorkflowParametersRequest(
        workflow_id=workflow_id, parameters=params
    )
    return request.SerializeToString()


def valid_request(method: str) -> bytes:
    return {ANALYZE: analyze, STREAM: analyze_stream, VALIDATE: validate}[method]()


# --- hand-encoded protobuf, for what the library would refuse to build ---------


def _with_raw_incident_field(number: int, payload: bytes) -> bytes:
    """An AnalyzeIncidentRequest whose incident carries one extra hand-encoded field."""
    return _field(1, incident().SerializeToString() + _field(number, payload))


def _swap_bytes(serialized: bytes, marker: bytes, replacement: bytes) -> bytes:
    assert len(marker) == len(replacement) and serialized.count(marker) == 1
    return serialized.replace(marker, replacement)


# --- boundary messages ------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    payload: bytes
    allowed: frozenset[grpc.StatusCode]


def boundary_cases() -> Iterator[Case]:
    """Messages at and just past every declared limit, empty ones and odd unicode."""
    ok, bad = frozenset({OK}), frozenset({INVALID})

    def analyzing(name: str, allowed: frozenset[grpc.StatusCode], edit: object) -> Case:
        message = incident()
        edit(message)  # type: ignore[operator]
        return Case(name, ANALYZE, analyze(message), allowed)

    def set_field(path: str, value: object) -> object:
        def edit(message: incident_pb2.Incident) -> None:
            *parents, leaf = path.split(".")
            target = message
            for part in parents:
                target = getattr(target, part)
            setattr(target, leaf, value)

        return edit

    for path, limit in [
        ("remediation_id", 253),
        ("incident_id", 253),
        ("signal.signal_type", 128),
        ("signal.alert_name", 256),
        ("signal.namespace", 253),
        ("error_details.error_message", 8192),
        ("error_details.description", 16384),
        ("business.priority", 16),
    ]:
        yield analyzing(f"{path} at {limit} chars", ok, set_field(path, "a" * limit))
        yield analyzing(f"{path} at {limit + 1} chars", bad, set_field(path, "a" * (limit + 1)))
    # Limits count characters, not bytes: 4-byte characters up to the limit are fine.
    yield analyzing(
        "description of 16384 emoji", ok, set_field("error_details.description", "🔥" * 16384)
    )
    yield analyzing("unicode everywhere", ok, _unicode)
    yield analyzing("NUL and control characters", frozenset({OK, INVALID}), _controls)
    yield analyzing("remediation_id empty", bad, set_field("remediation_id", ""))
    yield analyzing("remediation_id with a space", bad, set_field("remediation_id", "rr 1"))
    yield analyzing("signal missing", bad, lambda m: m.ClearField("signal"))
    yield analyzing("minimal incident", ok, _minimal)
    yield analyzing("severity 99 (undefined enum)", bad, set_field("signal.severity", 99))
    yield analyzing(
        "occurrence_count max uint32", bad, set_field("deduplication.occurrence_count", 2**32 - 1)
    )
    yield analyzing("64 signal labels", ok, _labels(64))
    yield analyzing("65 signal labels", bad, _labels(65))
    yield analyzing("32 custom labels x 16 values", ok, _custom(32, 16))
    yield analyzing("33 custom labels", bad, _custom(33, 1))
    yield analyzing("custom label with 17 values", bad, _custom(1, 17))
    yield analyzing("10,000 custom labels", bad, _custom(10_000, 1))
    yield analyzing("700 custom labels x 16 values", bad, _custom(700, 16))
    yield analyzing("100 affected resources", ok, _affected(100))
    yield analyzing("101 affected resources", bad, _affected(101))
    for field in ("error_details.firing_time", "error_details.received_time",
                  "deduplication.first_seen", "deduplication.last_seen"):  # fmt: skip
        yield analyzing(f"{field} year 10000", bad, _timestamp(field, seconds=253402300800))
        yield analyzing(f"{field} before year 1", bad, _timestamp(field, seconds=-62135596801))
        yield analyzing(f"{field} nanos 1e9", bad, _timestamp(field, nanos=1_000_000_000))
        yield analyzing(f"{field} negative nanos", bad, _timestamp(field, nanos=-1))
    yield Case("empty AnalyzeIncident", ANALYZE, b"", bad)
    yield Case("empty AnalyzeIncidentStream", STREAM, b"", bad)
    yield Case("empty ValidateWorkflowParameters", VALIDATE, b"", bad)
    yield Case(
        "validate: unknown workflow",
        VALIDATE,
        validate("no-such-workflow-v1"),
        frozenset({NOT_FOUND}),
    )
    yield Case("validate: workflow id with ..", VALIDATE, validate("a..b"), bad)
    yield Case("validate: workflow id 129 chars", VALIDATE, validate("w" * 129), bad)
    yield Case("validate: no parameters", VALIDATE, validate("restart-pod-v1", {}), ok)
    yield Case(
        "validate: 1 MB parameter name",
        VALIDATE,
        validate(parameters={"N" * 1_000_000: "x"}),
        frozenset({OK, INVALID}),
    )
    yield Case(
        "validate: 10,000 parameters",
        VALIDATE,
        validate(parameters={f"P{i}": i for i in range(10_000)}),
        frozenset({OK, INVALID}),
    )
    yield Case(
        "validate: unicode values",
        VALIDATE,
        validate(
            parameters={
                "NAMESPACE": "пространство",
                "DEPLOYMENT_NAME": "😀",
                "MEMORY_LIMIT_NEW": "１Gi",
            }
        ),
        ok,
    )
    yield Case("validate: invalid UTF-8 workflow_id", VALIDATE,
               _swap_bytes(validate("hx-AB"), b"hx-AB", b"hx-\xff\xfe"), bad)  # fmt: skip
    marked = analyze(incident("rr-MARKER"))
    yield Case("analyze: invalid UTF-8 remediation_id", ANALYZE,
               _swap_bytes(marked, b"rr-MARKER", b"rr-\xffARKER"), bad)  # fmt: skip
    for depth in (32, 33, 100):
        params = _field(1, b"oomkill-increase-memory-v1") + _field(2, nested_struct(depth))
        yield Case(f"validate: Struct nested {depth}", VALIDATE, params, frozenset({OK, INVALID}))
        deep = _with_raw_incident_field(9, _field(2, nested_struct(depth)))
        yield Case(
            f"analyze: detected_labels nested {depth}", ANALYZE, deep, frozenset({OK, INVALID})
        )
    for depth in (60, 200):
        label = _field(1, _field(1, b"k") + _field(2, nested_list(depth, _STRING_LIST)))
        yield Case(f"analyze: custom label ListValue nested {depth}", ANALYZE,
                   _with_raw_incident_field(9, label), bad)  # fmt: skip


def _unicode(message: incident_pb2.Incident) -> None:
    message.signal.resource_name = "payment-api-ñ-日本-🔥"
    message.error_details.description = "שגיאה \u202e desrever \u200b zero-width e\u0301" * 20
    message.cluster.signal_labels["ключ"] = "значение 🙂"


def _controls(message: incident_pb2.Incident) -> None:
    message.error_details.error_message = "line1\nline2\x00\x01\x1b[31mred\x7f"
    message.signal.alert_name = "\x00"


def _minimal(message: incident_pb2.Incident) -> None:
    rid = message.remediation_id
    message.Clear()
    message.remediation_id = rid
    message.signal.signal_type = "OOMKilled"


def _labels(count: int) -> object:
    def edit(message: incident_pb2.Incident) -> None:
        message.cluster.signal_labels.clear()
        for i in range(count):
            message.cluster.signal_labels[f"label-{i}"] = "v"

    return edit


def _custom(keys: int, values: int) -> object:
    def edit(message: incident_pb2.Incident) -> None:
        labels = message.enrichment_results.custom_labels
        labels.clear()
        for i in range(keys):
            for j in range(values):
                labels[f"key-{i}"].values.add(string_value=f"value-{j}")

    return edit


def _affected(count: int) -> object:
    def edit(message: incident_pb2.Incident) -> None:
        message.storm.is_storm = True
        message.storm.affected_resources.extend(f"pod/p-{i}" for i in range(count))

    return edit


def _timestamp(path: str, *, seconds: int = 1795335123, nanos: int = 0) -> object:
    def edit(message: incident_pb2.Incident) -> None:
        section, name = path.split(".")
        stamp = getattr(getattr(message, section), name)
        stamp.seconds = seconds
        stamp.nanos = nanos

    return edit


# --- random and mutated payloads ----------------------------------------------------


def hostile_payloads(method: str, rng: random.Random, count: int) -> Iterator[tuple[str, bytes]]:
    """`count` (description, bytes) pairs: random bytes and mutations of valid requests."""
    kinds = ("random", "bitflip", "truncate", "splice", "insert", "bad-tag")
    for index in range(count):
        kind = kinds[index % len(kinds)]
        base = valid_request(method)  # fresh remediation id every time
        if kind == "random":
            size = rng.choice((1, 2, 7, 64, 512, 4096))
            yield kind, rng.randbytes(size)
        elif kind == "bitflip":
            data = bytearray(base)
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            yield kind, bytes(data)
        elif kind == "truncate":
            yield kind, base[: rng.randrange(1, len(base))]
        elif kind == "splice":
            other = valid_request(rng.choice(METHODS))
            cut = rng.randrange(len(base))
            yield kind, base[:cut] + other[rng.randrange(len(other)) :]
        elif kind == "insert":
            at = rng.randrange(len(base))
            yield kind, base[:at] + rng.randbytes(rng.randint(1, 16)) + base[at:]
        else:
            # Wire types 3/4 (groups), 6/7 (undefined), huge field numbers and lengths.
            tag = rng.choice(
                (_varint(1 << 3 | 3), _varint(1 << 3 | 7), _varint((2**29 - 1) << 3 | 2))
            )
            yield kind, base + tag + _varint(rng.choice((0, 5, 2**31, 2**62)))
