"""What the built-in analyst has read: its tool calls so far and the service's record.

The analyst learns about the cluster only through the tool calls it makes,
like a language model; what it decides from is structured: the objects as
the service's observed record parsed them when those calls read them
(`domain.observed`), and the events and log lines the calls returned. Its
evidence steps (`builtin_evidence`, `builtin_pod_evidence`) each return the
read they still need (a `Step`) or the `Findings` of their part.
"""

from __future__ import annotations

import dataclasses
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
    "Findings",
    "Reads",
    "Step",
    "condition_text",
    "exchanges",
]

GET, LIST, EVENTS, LOGS, OWNERS = (
    "kubernetes_get",
    "kubernetes_list",
    "kubernetes_events",
    "kubernetes_pod_logs",
    "kubernetes_owner_chain",
)


@dataclass(frozen=True)
class Findings:
    """Evidence as `object field=value` lines, and the resource to remediate."""

    evidence: tuple[str, ...] = ()
    target: str = ""  # namespace/group/Kind/name
    memory_limit: str = ""
    pod: str = ""  # namespace/name of the Pod read and its worst container
    container: str = ""
    config_error: str = ""  # the previous-log line blaming the configuration
    probe_failure: str = ""  # the event saying the liveness probe killed the container

    def plus(self, later: Findings) -> Findings:
        """Both parts: the evidence of each, and `later`'s values where it has one."""
        values = {
            f.name: getattr(later, f.name) or getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "evidence"
        }
        return Findings(evidence=self.evidence + later.evidence, **values)

    def target_resource(self) -> dict[str, str] | None:
        parts = self.target.split("/")
        if len(parts) != 4:
            return None
        namespace, group, kind, name = parts
        return {
            "namespace": namespace,
            "kind": kind,
            "name": name,
            "api_group": "" if group == "core" else group,
        }


Step = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Exchange:
    """One tool call of the conversation and its parsed JSON arguments and result."""

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


@dataclass(frozen=True)
class Reads:
    """The tool calls made so far and the record of what they read."""

    exchanges: Sequence[Exchange]
    observed: Observed

    def returned(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The data of the last `tool` call with `arguments`; None before it, {} on an error."""
        for exchange in reversed(self.exchanges):
            if exchange.name == tool and all(
                exchange.arguments.get(k) == v for k, v in arguments.items()
            ):
                data = exchange.result.get("cluster_data")
                return data if isinstance(data, dict) else {}
        return None

    def object(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        """The record of one object ({} when it was not read)."""
        return next(
            (
                o
                for o in self.observed.objects.values()
                if o["kind"].lower() == kind.lower()
                and o["namespace"] == namespace
                and o["name"] == name
            ),
            {},
        )

    def got(self, kind: str, namespace: str | None, name: str) -> Step | dict[str, Any]:
        """The object's record once `kubernetes_get` read it, else that read
        (`namespace` None: a cluster-scoped kind, asked without one)."""
        arguments = {"kind": kind, "name": name}
        if namespace is not None:
            arguments["namespace"] = namespace
        if self.returned(GET, arguments) is None:
            return GET, arguments
        return self.object(kind, namespace or "", name)

    def pods(self, namespace: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        """The Pods read in `namespace` that carry all of `labels`, in the order read."""
        return [
            o
            for o in self.observed.objects.values()
            if o["kind"] == "Pod"
            and o["namespace"] == namespace
            and labels.items() <= o["labels"].items()
        ]


def condition_text(condition: dict[str, str]) -> str:
    """`Ready=False (KubeletNotReady: message)`."""
    detail = ": ".join(p for p in (condition["reason"], condition["message"]) if p)
    text = f"{condition['type']}={condition['status']}"
    return f"{text} ({detail})" if detail else text
