"""The service's method paths and hand-encoded protobuf, for requests sent as raw bytes.

Some requests must be what no protobuf library would write (Struct / ListValue
nested past the decoder's recursion limit): they are built here field by field.
"""

from __future__ import annotations

SERVICE = "/hapi.v1.IncidentAnalysisService/"
ANALYZE = SERVICE + "AnalyzeIncident"
STREAM = SERVICE + "AnalyzeIncidentStream"
VALIDATE = SERVICE + "ValidateWorkflowParameters"
METHODS = (ANALYZE, STREAM, VALIDATE)


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(number: int, payload: bytes) -> bytes:
    """Field `number` with wire type 2 (bytes, string, message)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def nested_struct(depth: int) -> bytes:
    """A Struct whose single field holds a Struct, `depth` levels down.

    Built as bytes: the Python runtime itself refuses to build (or serialize)
    a message deeper than its recursion limit."""
    payload = b""
    for _ in range(depth):
        value = length_delimited(5, payload)  # Value.struct_value
        entry = length_delimited(1, b"k") + length_delimited(2, value)  # map entry
        payload = length_delimited(1, entry)  # Struct.fields
    return payload


def nested_list(depth: int, innermost: bytes = b"") -> bytes:
    """A ListValue whose single value is a ListValue, `depth` levels down to `innermost`."""
    payload = innermost
    for _ in range(depth):
        value = length_delimited(6, payload)  # Value.list_value
        payload = length_delimited(1, value)  # ListValue.values
    return payload
