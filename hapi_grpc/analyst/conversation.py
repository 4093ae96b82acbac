"""What the analyst has read so far: its tool calls, their answers, and the service's record.

The analyst learns about the cluster only through the tool calls it makes, as a
language model does. It decides from structured data: the objects, events and
logs as the service's observed record parsed them (`domain.observed`) and the
JSON the tools returned. `Reads` answers "was this read already, and what did it
return"; a stage that still needs a read returns it as a `Step`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.llm import ChatMessage, ToolCall
from hapi_grpc.domain.observed import Observed

__all__ = [
    "EVENTS",
    "GET",
    "LIST",
    "LOGS",
    "OWNERS",
    "Exchange",
    "Reads",
    "Step",
    "exchanges",
    "pending",
]

GET, LIST, EVENTS, LOGS, OWNERS = (
    "kubernetes_get",
    "kubernetes_list",
    "kubernetes_events",
    "kubernetes_pod_logs",
    "kubernetes_owner_chain",
)

# A tool call the analyst still needs to make: (tool name, arguments).
Step = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Exchange:
    """One tool call of the conversation with its parsed JSON arguments and result."""

    name: str
    arguments: dict[str, Any]
    result: dict[str, Any]


def exchanges(messages: Iterable[ChatMessage]) -> list[Exchange]:
    """The conversation's tool calls, each with its parsed arguments and result."""
    calls: dict[str, ToolCall] = {}
    found: list[Exchange] = []
    for message in messages:
        if message.role == "assistant":
            calls.update((call.id, call) for call in message.tool_calls)
        elif message.role == "tool":
            call = calls.get(message.tool_call_id)
            if call is not None:
                found.append(Exchange(call.name, _object(call.arguments), _object(message.content)))
    return found


def _object(text: str) -> dict[str, Any]:
    try:
        value = bounded_json.loads(text, max_bytes=len(text) + 1)  # our own tool outputs
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _matches(exchange: Exchange, tool: str, arguments: dict[str, Any]) -> bool:
    return exchange.name == tool and all(
        exchange.arguments.get(k) == v for k, v in arguments.items()
    )


@dataclass(frozen=True)
class Reads:
    """The tool calls made so far, the tools offered, and the record of what they read."""

    exchanges: Sequence[Exchange]
    observed: Observed
    offered: frozenset[str] = frozenset()

    def unread(self, tool: str, arguments: dict[str, Any], **extra: Any) -> list[Step]:
        """The `tool` call with `arguments` (and `extra`, such as a limit) until a call
        with (at least) these arguments was made; then nothing."""
        if any(_matches(e, tool, arguments) for e in self.exchanges):
            return []
        return [(tool, {**arguments, **extra})]

    def returned(self, tool: str, arguments: dict[str, Any], key: str = "cluster_data") -> Any:
        """The data of the last `tool` call with `arguments`; None before it, {} on an error."""
        for exchange in reversed(self.exchanges):
            if _matches(exchange, tool, arguments):
                data = exchange.result.get(key)
                return data if isinstance(data, dict) else {}
        return None

    def labelled(self, kind: str, namespace: str, labels: dict[str, str], limit: int) -> list[Step]:
        """The list read of the `kind` objects in `namespace` that carry `labels` until it
        was made; none without labels (that would list every `kind` object)."""
        if not labels:
            return []
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        arguments = {"kind": kind, "namespace": namespace, "label_selector": selector}
        return self.unread(LIST, arguments, limit=limit)

    def results(self, tool: str) -> list[Exchange]:
        """Every call of `tool`, in the order made."""
        return [e for e in self.exchanges if e.name == tool]

    def object(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        """The record of one object ({} when it was not read)."""
        lowered = kind.lower()
        return next(
            (
                o
                for o in _plain(self.observed.objects.values())
                if o["kind"].lower() == lowered
                and o["namespace"] == namespace
                and o["name"] == name
            ),
            {},
        )

    def objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """The records of every object of `kind` read (in `namespace` when given)."""
        return [
            o
            for o in _plain(self.observed.objects.values())
            if o["kind"] == kind and (namespace is None or o["namespace"] == namespace)
        ]

    def got(self, kind: str, namespace: str | None, name: str) -> Step | dict[str, Any]:
        """The object's record once `kubernetes_get` (or another read) recorded it, else
        the `kubernetes_get` that reads it (`namespace` None: a cluster-scoped kind)."""
        found = self.object(kind, namespace or "", name)
        arguments: dict[str, Any] = {"kind": kind, "name": name}
        if namespace is not None:
            arguments["namespace"] = namespace
        if found or self.returned(GET, arguments) is not None:
            return found
        return GET, arguments

    def pods(self, namespace: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        """The Pods read in `namespace` that carry all of `labels`, in the order read."""
        return [o for o in self.objects("Pod", namespace) if labels.items() <= o["labels"].items()]

    def events_about(self, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
        """The recorded events about one object (folded, newest first as read)."""
        return [
            e
            for e in _plain(self.observed.events)
            if e["kind"] == kind and e["namespace"] == namespace and e["name"] == name
        ]


def pending(*found: Any) -> list[Step]:
    """The reads among `found` (a read's answer, or the `Step` that makes it)."""
    return [f for f in found if isinstance(f, tuple)]


def _plain(records: Iterable[Any]) -> Iterable[dict[str, Any]]:
    """Observed facts as the plain records the rules read (a TypedDict is a dict)."""
    return records
