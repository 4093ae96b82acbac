"""Bad requests caught before a handler runs: bytes that are not a valid message
(`Undecodable`), then cheap structural checks ahead of the protovalidate rules.

Design notes: docs/internals.md (`transport/request_limits.py`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from buf.validate import validate_pb2
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from hapi_grpc.domain.errors import FieldViolation
from hapi_grpc.domain.sensitive import clip
from hapi_grpc.transport.status import rich_status

log = logging.getLogger(__name__)

LOG_INTERVAL_SECONDS = 10.0

MAX_JSON_VALUES = 1024
"""JSON values a request may carry in validated fields (custom labels allow 512)."""

_JSON_TYPES = frozenset(
    {"google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.Value"}
)
_TIMESTAMP = "google.protobuf.Timestamp"
_NANOS_PER_SECOND = 1_000_000_000

# What a check does with the field's value.
_STRING, _BYTES, _SIZE_MAP, _SIZE_LIST, _MESSAGE, _TIME, _JSON = range(7)


@dataclass(slots=True)
class _Check:
    name: str
    action: int
    limit: int = 0
    plan: list[_Check] | None = None  # for submessages: the checks of their fields
    each: int = 0  # for maps and lists: 0 (nothing inside), _MESSAGE or _JSON
    rule_id: str = ""


_PLANS: dict[str, list[_Check]] = {}  # a message type's checks


def structural_violations(message: Message) -> list[FieldViolation]:
    """Violations of the declared size rules of `message`; empty when none."""
    found: list[FieldViolation] = []
    budget = [MAX_JSON_VALUES]
    _walk(message, _plan(message.DESCRIPTOR), "", found, budget)
    return found


def rule_path(descriptor: Any, rule_id: str) -> str | None:
    """Field path of the first field (or field holding a message) whose rules
    declare a CEL rule `rule_id`; "" for the message itself; None if unknown."""
    seen: set[str] = set()
    queue: list[tuple[Descriptor, str]] = [(descriptor, "")]
    while queue:
        desc, path = queue.pop(0)
        if desc.full_name in seen:
            continue
        seen.add(desc.full_name)
        if any(rule.id == rule_id for rule in _message_rules(desc).cel):
            return path
        for fd in desc.fields:
            sub = f"{path}.{fd.name}" if path else fd.name
            if any(rule.id == rule_id for rule in _field_rules(fd).cel):
                return sub
            if fd.message_type is not None and not fd.message_type.GetOptions().map_entry:
                queue.append((fd.message_type, sub))
            elif fd.message_type is not None:  # a map: its values
                value = fd.message_type.fields_by_name["value"]
                if value.message_type is not None:
                    queue.append((value.message_type, sub))
    return None


def _walk(
    msg: Message, plan: list[_Check], prefix: str, found: list[FieldViolation], budget: list[int]
) -> None:
    for check in plan:
        action = check.action
        if action == _STRING or action == _BYTES:
            if len(getattr(msg, check.name)) > check.limit:
                unit = "characters" if action == _STRING else "bytes"
                text = f"must be at most {check.limit} {unit}"
                found.append(FieldViolation(prefix + check.name, text, check.rule_id))
        elif action == _SIZE_MAP or action == _SIZE_LIST:
            value = getattr(msg, check.name)
            if check.limit and len(value) > check.limit:
                text = (
                    f"map must be at most {check.limit} entries"
                    if action == _SIZE_MAP
                    else f"must contain no more than {check.limit} item(s)"
                )
                found.append(FieldViolation(prefix + check.name, text, check.rule_id))
                continue  # too many to look inside
            if check.each == 0:
                continue
            path = prefix + check.name
            if action == _SIZE_MAP:
                items: Any = ((f'{path}["{clip(key, 64)}"]', value[key]) for key in value)
            else:
                items = ((f"{path}[{i}]", item) for i, item in enumerate(value))
            for sub, item in items:
                if check.each == _JSON:
                    if not _spend_json(item, sub, found, budget):
                        break
                elif check.plan is not None:
                    _walk(item, check.plan, sub + ".", found, budget)
        elif not msg.HasField(check.name):
            continue
        elif action == _TIME:
            nanos = getattr(msg, check.name).nanos
            if not 0 <= nanos < _NANOS_PER_SECOND:
                found.append(
                    FieldViolation(
                        prefix + check.name,
                        "must be a valid timestamp (nanos in [0, 999999999])",
                        "timestamp.nanos",
                    )
                )
        elif action == _JSON:
            _spend_json(getattr(msg, check.name), prefix + check.name, found, budget)
        elif check.plan:
            _walk(getattr(msg, check.name), check.plan, f"{prefix}{check.name}.", found, budget)


def _spend_json(value: Message, path: str, found: list[FieldViolation], budget: list[int]) -> bool:
    """Count the JSON values in `value` against the request's budget; False
    (and a violation on `path`) once it is spent."""
    if budget[0] < 0:
        return False
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        name = item.DESCRIPTOR.full_name
        if name == "google.protobuf.Value":
            kind = item.WhichOneof("kind")
            if kind == "list_value":
                item = item.list_value
            elif kind == "struct_value":
                item = item.struct_value
            else:
                continue
            name = item.DESCRIPTOR.full_name
        children: Any = item.values if name == "google.protobuf.ListValue" else item.fields
        budget[0] -= len(children)
        if budget[0] < 0:
            found.append(
                FieldViolation(
                    path,
                    f"a request may carry at most {MAX_JSON_VALUES} JSON values in total",
                    "json.max_values",
                )
            )
            return False
        if name == "google.protobuf.ListValue":
            stack.extend(v for v in children if v.WhichOneof("kind") in _NESTED)
        else:
            stack.extend(
                v for v in (children[k] for k in children) if v.WhichOneof("kind") in _NESTED
            )
    return True


_NESTED = frozenset({"list_value", "struct_value"})


def _plan(desc: Any) -> list[_Check]:
    plan = _PLANS.get(desc.full_name)
    if plan is None:
        plan = _PLANS[desc.full_name] = []  # registered first: types may recurse
        plan.extend(c for fd in desc.fields if (c := _check(fd)) is not None)
    return plan


def _check(fd: FieldDescriptor) -> _Check | None:
    rules = _field_rules(fd)
    if rules.ignore == validate_pb2.IGNORE_ALWAYS:
        return None
    kind = rules.WhichOneof("type")
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        limit = rules.map.max_pairs if kind == "map" and rules.map.HasField("max_pairs") else 0
        each, plan = _inside(fd.message_type.fields_by_name["value"])
        if not limit and not each:
            return None
        return _Check(fd.name, _SIZE_MAP, limit, plan, each, "map.max_pairs")
    if fd.is_repeated:
        has = kind == "repeated" and rules.repeated.HasField("max_items")
        limit = rules.repeated.max_items if has else 0
        each, plan = _inside(fd)
        if not limit and not each:
            return None
        return _Check(fd.name, _SIZE_LIST, limit, plan, each, "repeated.max_items")
    if (
        fd.type == FieldDescriptor.TYPE_STRING
        and kind == "string"
        and rules.string.HasField("max_len")
    ):
        return _Check(fd.name, _STRING, rules.string.max_len, rule_id="string.max_len")
    if (
        fd.type == FieldDescriptor.TYPE_BYTES
        and kind == "bytes"
        and rules.bytes.HasField("max_len")
    ):
        return _Check(fd.name, _BYTES, rules.bytes.max_len, rule_id="bytes.max_len")
    if fd.message_type is None:
        return None
    name = fd.message_type.full_name
    if name == _TIMESTAMP:
        return _Check(fd.name, _TIME)
    if name in _JSON_TYPES:
        return _Check(fd.name, _JSON)
    plan = _plan(fd.message_type)
    return _Check(fd.name, _MESSAGE, plan=plan)


def _inside(fd: FieldDescriptor) -> tuple[int, list[_Check] | None]:
    """What to look at inside each element of a map value or list item."""
    if fd.message_type is None:
        return 0, None
    if fd.message_type.full_name in _JSON_TYPES:
        return _JSON, None
    plan = _plan(fd.message_type)
    return (_MESSAGE, plan) if plan else (0, None)


def _field_rules(fd: FieldDescriptor) -> Any:
    return fd.GetOptions().Extensions[validate_pb2.field]


def _message_rules(desc: Descriptor) -> Any:
    return desc.GetOptions().Extensions[validate_pb2.message]


# --- Undecodable requests -----------------------------------------------------
class Undecodable:
    """Stands in for a request that could not be decoded."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def tolerant_deserializer(
    deserializer: Callable[[bytes], Any] | None,
) -> Callable[[bytes], Any] | None:
    """`deserializer`, answering `Undecodable` where it would raise."""
    if deserializer is None:
        return None
    decode = deserializer

    def deserialize(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception as exc:  # DecodeError, RecursionError, ... : all the caller's bytes
            return Undecodable(f"{type(exc).__name__}: {clip(str(exc), 200)}")

    return deserialize


class UndecodableAnswer:
    """The status undecodable requests of one method get (fixed text), and a
    log line about them at most every `LOG_INTERVAL_SECONDS`, counting the
    ones it held back."""

    __slots__ = ("_method", "_next", "_suppressed", "status")

    def __init__(self, method: str) -> None:
        self._method = method
        self._next = 0.0
        self._suppressed = 0
        self.status = rich_status(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"request is not a valid {_request_type(method)} message",
        )

    def __call__(self, request: Undecodable) -> grpc.Status:
        now = time.monotonic()
        if now < self._next:
            self._suppressed += 1
            return self.status
        self._next = now + LOG_INTERVAL_SECONDS
        suppressed, self._suppressed = self._suppressed, 0
        log.warning(
            "undecodable request refused with INVALID_ARGUMENT",
            extra={
                "method": self._method,
                "reason": request.reason,
                "suppressed_since_last": suppressed,
            },
        )
        return self.status


def _request_type(method: str) -> str:
    """`hapi.v1.AnalyzeIncidentRequest` for `/hapi.v1.IncidentAnalysisService/AnalyzeIncident`."""
    try:
        found = descriptor_pool.Default().FindMethodByName(method.strip("/").replace("/", "."))
    except KeyError:
        return "hapi.v1 request"
    return str(found.input_type.full_name)
