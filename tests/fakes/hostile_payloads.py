"""Hostile request bytes for every hapi.v1 method, as hypothesis strategies.

Requests are produced as serialized bytes, to be sent with
`channel.unary_unary(method)` (no serializer), so they can be what no protobuf
library would write: random bytes, bit flips, truncations and splices of valid
requests, invalid UTF-8 in a string field, Struct / ListValue nested past the
decoder's recursion limit, maps far beyond their declared sizes, timestamps
outside the range a Timestamp can hold.

Every valid incident gets a fresh random `remediation_id`, so a mutated copy
never collides with an earlier call's id.
"""

from __future__ import annotations

import uuid

from hypothesis import strategies as st

from hapi.v1 import common_pb2, incident_pb2, service_pb2, validation_pb2
from tests.fakes.wire import (
    ANALYZE,
    METHODS,
    STREAM,
    VALIDATE,
    length_delimited,
    nested_list,
    nested_struct,
)

__all__ = ["ANALYZE", "METHODS", "STREAM", "VALIDATE"]

STREAMING = frozenset({STREAM})

# The protobuf decoder's recursion limit is 100 messages; a Struct level is
# three (Struct, map entry, Value) and a ListValue level two.
STRUCT_TOO_DEEP = 34
LIST_TOO_DEEP = 60


def incident() -> incident_pb2.Incident:
    """A valid incident the built-in analyst answers, with a fresh id."""
    msg = incident_pb2.Incident(
        remediation_id=f"rr-hostile-{uuid.uuid4().hex}",
        incident_id="inc-1",
        signal=incident_pb2.SignalInfo(
            signal_type="OOMKilled",
            severity=common_pb2.SEVERITY_HIGH,
            namespace="payments",
            resource_kind="Deployment",
            resource_name="payment-api",
        ),
    )
    msg.error_details.error_message = "Container payment-api was OOMKilled"
    msg.error_details.firing_time.seconds = 1_795_335_123
    msg.deduplication.first_seen.seconds = 1_795_300_000
    msg.cluster.signal_labels["alertname"] = "KubePodOOMKilled"
    msg.enrichment_results.custom_labels["team"].extend(["payments"])
    return msg


def valid_request(method: str) -> bytes:
    """A valid serialized request for `method`."""
    if method == VALIDATE:
        request = validation_pb2.ValidateWorkflowParametersRequest(
            workflow_id="scale-deployment-replicas-v1"
        )
        request.parameters.update(
            {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "REPLICA_COUNT": 3}
        )
        return request.SerializeToString()
    if method == STREAM:
        return service_pb2.AnalyzeIncidentStreamRequest(incident=incident()).SerializeToString()
    return service_pb2.AnalyzeIncidentRequest(incident=incident()).SerializeToString()


# --- raw wire format -------------------------------------------------------------


def in_incident(incident_field: bytes) -> bytes:
    """An AnalyzeIncidentRequest whose incident is a valid one plus `incident_field`."""
    return length_delimited(1, incident().SerializeToString() + incident_field)


def deep_payloads(method: str) -> list[bytes]:
    """Struct and ListValue nesting past the decoder's limit, where `method` takes them."""
    if method == VALIDATE:
        head = length_delimited(1, b"scale-deployment-replicas-v1")
        return [
            head + length_delimited(2, nested_struct(STRUCT_TOO_DEEP)),
            head
            + length_delimited(
                2,
                length_delimited(
                    1,
                    length_delimited(1, b"P")
                    + length_delimited(2, length_delimited(6, nested_list(LIST_TOO_DEEP))),
                ),
            ),
        ]
    # EnrichmentResults (9): detected_labels (2) Struct, custom_labels (1) map<string, ListValue>.
    deep_detected = length_delimited(9, length_delimited(2, nested_struct(STRUCT_TOO_DEEP)))
    entry = length_delimited(1, b"team") + length_delimited(2, nested_list(LIST_TOO_DEEP))
    deep_custom = length_delimited(9, length_delimited(1, entry))
    return [in_incident(deep_detected), in_incident(deep_custom)]


def invalid_utf8(method: str) -> bytes:
    """A string field holding bytes that are not UTF-8 (`workflow_id = b"hx-\\xff"`)."""
    if method == VALIDATE:
        return length_delimited(1, b"hx-\xff")
    return length_delimited(1, length_delimited(1, b"rr-\xff\xfe") + length_delimited(3, b""))


def huge_maps(method: str) -> list[bytes]:
    """Maps and lists far past their declared sizes (decodable, within 4 MB)."""
    if method == VALIDATE:
        request = validation_pb2.ValidateWorkflowParametersRequest(workflow_id="scale-v1")
        request.parameters.update({f"P{i}": i for i in range(20_000)})
        return [request.SerializeToString()]
    wide = incident()
    for i in range(10_000):
        wide.enrichment_results.custom_labels[f"k{i}"].extend(["v"])
    tall = incident()
    for i in range(700):
        tall.enrichment_results.custom_labels[f"k{i}"].extend([f"v{j}" for j in range(16)])
    long_list = incident()
    long_list.enrichment_results.custom_labels["team"].extend(["v"] * 200_000)
    labels = incident()
    for i in range(50_000):
        labels.cluster.signal_labels[f"k{i}"] = "v"
    return [_request(method, m) for m in (wide, tall, long_list, labels)]


def bad_timestamps(method: str) -> list[bytes]:
    """Timestamps a Timestamp cannot hold, on every timestamp field of an incident."""
    if method == VALIDATE:
        return []
    out = []
    for seconds, nanos in ((253_402_300_800, 0), (-62_135_596_801, 0), (0, -1), (0, 10**9)):
        for section, name in (
            ("error_details", "firing_time"),
            ("error_details", "received_time"),
            ("deduplication", "first_seen"),
            ("deduplication", "last_seen"),
        ):
            msg = incident()
            stamp = getattr(getattr(msg, section), name)
            stamp.seconds, stamp.nanos = seconds, nanos
            out.append(_request(method, msg))
    return out


def _request(method: str, msg: incident_pb2.Incident) -> bytes:
    cls = (
        service_pb2.AnalyzeIncidentStreamRequest
        if method == STREAM
        else service_pb2.AnalyzeIncidentRequest
    )
    return cls(incident=msg).SerializeToString()


def crafted(method: str) -> list[bytes]:
    """Every hand-made hostile payload for `method`."""
    return [
        *deep_payloads(method),
        invalid_utf8(method),
        *huge_maps(method),
        *bad_timestamps(method),
    ]


# --- hypothesis strategies -------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, method: str) -> bytes:
    """A valid request of `method` with bits flipped, cut, spliced or overwritten."""
    data = bytearray(valid_request(method))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("flip", "truncate", "insert", "delete", "overwrite")))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[at : at + len(chunk)] = chunk
    return bytes(data)


def hostile(method: str) -> st.SearchStrategy[bytes]:
    """Random bytes, mutated valid requests and the crafted payloads of `method`."""
    return st.one_of(
        st.binary(max_size=512),
        mutated(method),
        st.sampled_from(crafted(method)),
    )
