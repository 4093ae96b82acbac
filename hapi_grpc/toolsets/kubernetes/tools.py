"""The `kubernetes` tools: read-only investigation of the incident's cluster.

Design notes: docs/internals.md (`toolsets/kubernetes/tools.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2

from hapi_grpc.adapters.kubernetes.reader import ApiServerReader
from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.sensitive import redact_head
from hapi_grpc.domain.tenancy import Caller
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.toolsets.kubernetes import (
    INVESTIGATION_OUTPUT_CHARS,
    KubernetesToolset,
    KubernetesToolsetSettings,
)
from hapi_grpc.toolsets.kubernetes.args import (
    KubernetesEventsArgs,
    KubernetesGetArgs,
    KubernetesListArgs,
    KubernetesPodLogsArgs,
)
from hapi_grpc.toolsets.kubernetes.facts import record_object
from hapi_grpc.toolsets.kubernetes.log_facts import record_event, record_log
from hapi_grpc.toolsets.kubernetes.node_stats import NODE_STATS_TOOL, KubernetesNodeStats
from hapi_grpc.toolsets.kubernetes.owners import OWNERS_TOOL, KubernetesOwnerChain
from hapi_grpc.toolsets.kubernetes.scope import KubernetesScope, ScopeRefusal
from hapi_grpc.toolsets.kubernetes.session import KubernetesSession, guarded
from hapi_grpc.toolsets.kubernetes.summaries import fold_events, list_line
from hapi_grpc.toolsets.kubernetes.views import object_view

__all__ = [
    "EVENTS_TOOL",
    "GET_TOOL",
    "LIST_TOOL",
    "LOGS_TOOL",
    "NODE_STATS_TOOL",
    "OWNERS_TOOL",
    "KubernetesToolsetSource",
]

GET_TOOL = "kubernetes_get"
LIST_TOOL = "kubernetes_list"
EVENTS_TOOL = "kubernetes_events"
LOGS_TOOL = "kubernetes_pod_logs"
_LOG_LINE_CHARS = 500
_LOG_BYTES = 256 * 1024
_EVENTS_READ = 200
_EVENTS_RECORDED = 50


@dataclass(frozen=True)
class KubernetesGet:
    session: KubernetesSession
    name: str = GET_TOOL
    description: str = (
        "Read one Kubernetes object (any kind the cluster serves, custom resources included)."
        " Pods show container states, last termination, restarts and limits; Nodes show"
        " conditions, taints and allocatable; workloads show replicas and conditions."
    )
    arguments: type[KubernetesGetArgs] = KubernetesGetArgs

    @guarded
    async def run(self, args: KubernetesGetArgs, ctx: ToolContext) -> ToolResult:
        rtype = await self.session.resolve(args.kind, args.namespace, ctx)
        namespace = args.namespace if rtype.namespaced else None
        obj = await self.session.reader.get(rtype, namespace, args.name, ctx.timeout)
        if ctx.observed is not None:
            record_object(ctx.observed, obj, rtype.kind)
        return self.session.answer(object_view(obj))


@dataclass(frozen=True)
class KubernetesList:
    session: KubernetesSession
    name: str = LIST_TOOL
    description: str = (
        "List objects of one kind (in a namespace for namespaced kinds), optionally by label"
        " or field selector; one compact line per object."
    )
    arguments: type[KubernetesListArgs] = KubernetesListArgs

    @guarded
    async def run(self, args: KubernetesListArgs, ctx: ToolContext) -> ToolResult:
        rtype = await self.session.resolve(args.kind, args.namespace, ctx)
        namespace = args.namespace if rtype.namespaced else None
        found = await self.session.reader.list(
            rtype,
            namespace,
            ctx.timeout,
            label_selector=args.label_selector or "",
            field_selector=args.field_selector or "",
            limit=args.limit,
        )
        items = [i for i in found.get("items") or [] if isinstance(i, dict)]
        for item in items:
            # A list's items carry neither kind nor apiVersion: the list's own.
            item.setdefault("kind", rtype.kind)
            item.setdefault("apiVersion", rtype.api_version)
            if ctx.observed is not None:
                record_object(ctx.observed, item)
        data: dict[str, Any] = {"kind": rtype.kind, "items": [list_line(i) for i in items]}
        if namespace:
            data["namespace"] = namespace
        if (found.get("metadata") or {}).get("continue"):
            data["more"] = f"more than {args.limit} exist; narrow with a selector"
        return self.session.answer(data, "items")


@dataclass(frozen=True)
class KubernetesEvents:
    session: KubernetesSession
    name: str = EVENTS_TOOL
    description: str = (
        "Events about one object (kind and name) or a whole namespace, newest first, folded"
        " by reason and message with counts and first/last seen."
    )
    arguments: type[KubernetesEventsArgs] = KubernetesEventsArgs

    @guarded
    async def run(self, args: KubernetesEventsArgs, ctx: ToolContext) -> ToolResult:
        session = self.session
        if args.namespace is None and args.name is None:
            raise ScopeRefusal("give a namespace, or the kind and name of an object.")
        namespace = args.namespace
        kind = args.kind
        if args.name is not None and kind is not None:
            target = await session.resolve(kind, namespace, ctx)
            kind = target.kind
            if not target.namespaced:
                namespace = None  # a Node's events may be in any namespace
        elif namespace is not None:
            session.scope.namespaces.check(namespace)
        else:
            raise ScopeRefusal("give the kind of the object together with its name.")
        core = await session.reader.resolve("v1/Event", ctx.timeout)
        newer = await session.reader.resolve("events.k8s.io/v1/Event", ctx.timeout)
        about = [(k, v) for k, v in (("kind", kind), ("name", args.name)) if v]
        lists = []
        # The same fields under each API's name for the object an event is about.
        for rtype, prefix in ((core, "involvedObject"), (newer, "regarding")):
            found = await session.reader.list(
                rtype,
                namespace,
                ctx.timeout,
                field_selector=",".join(f"{prefix}.{k}={v}" for k, v in about),
                limit=_EVENTS_READ,
            )
            items = [
                i
                for i in found.get("items") or []
                if isinstance(i, dict)
                and session.scope.namespaces.allows(
                    (i.get("metadata") or {}).get("namespace") or "default"
                )
            ]
            lists.append(items)
        folded = fold_events(*lists)
        if ctx.observed is not None and args.name is not None and kind is not None:
            for event in folded[:_EVENTS_RECORDED]:
                # The record keeps the whole message: its end often says why.
                whole = {**event.view(), "message": event.message}
                record_event(ctx.observed, kind, namespace or "", args.name, whole)
        data: dict[str, Any] = {
            "kind": "EventSummary",
            "about": f"{kind}/{args.name}" if args.name else f"namespace {namespace}",
            "events": [e.view() for e in folded[: args.limit]],
        }
        if len(folded) > args.limit:
            data["more"] = f"{len(folded) - args.limit} older folded events not shown"
        if not folded:
            data["note"] = "no events (events expire after about an hour by default)"
        return session.answer(data, "events")


@dataclass(frozen=True)
class KubernetesPodLogs:
    session: KubernetesSession
    name: str = LOGS_TOOL
    description: str = (
        "Tail of one container's log; previous=true reads the instance that crashed (use it"
        " for CrashLoopBackOff). Optional RE2 filter and since_seconds. Secrets are redacted."
    )
    arguments: type[KubernetesPodLogsArgs] = KubernetesPodLogsArgs

    @guarded
    async def run(self, args: KubernetesPodLogsArgs, ctx: ToolContext) -> ToolResult:
        session = self.session
        pods = await session.resolve("Pod", args.namespace, ctx)
        container = args.container
        if container is None:
            pod = await session.reader.get(pods, args.namespace, args.pod, ctx.timeout)
            names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
            if len(names) != 1:
                raise ScopeRefusal(f"the pod has containers {names}: name one.")
            container = str(names[0])
        text = await session.reader.pod_log(
            args.namespace,
            args.pod,
            container,
            ctx.timeout,
            previous=args.previous,
            tail_lines=args.tail_lines,
            since_seconds=args.since_seconds,
            limit_bytes=_LOG_BYTES,
        )
        lines = text.splitlines()[-args.tail_lines :]
        read = len(lines)
        if ctx.observed is not None:
            record_log(
                ctx.observed,
                args.namespace,
                args.pod,
                container,
                previous=args.previous,
                lines=lines,
            )
        if args.filter:
            pattern = re2.compile(args.filter)
            lines = [line for line in lines if pattern.search(line)]
        shown = [_log_line(line) for line in lines]
        data: dict[str, Any] = {
            "kind": "PodLog",
            "pod": f"{args.namespace}/{args.pod}",
            "container": container,
            "previous": args.previous,
            "lines_read": read,
            "lines": shown,
        }
        if args.filter:
            data["filter"] = args.filter
        return session.answer(data, "lines")


def _log_line(line: str) -> str:
    # Cut (with redact_head's margin) before redacting: a 200 KB line costs what 500 characters do.
    text, cut = redact_head(line.rstrip(), _LOG_LINE_CHARS)
    return text[: _LOG_LINE_CHARS - 1] + "…" if cut else text


@dataclass(frozen=True)
class KubernetesToolsetSource:
    """Makes each investigation's `kubernetes` toolset (its own output budget)."""

    reader: ApiServerReader
    scope: KubernetesScope
    limits: ToolsetLimits
    investigation_chars: int = INVESTIGATION_OUTPUT_CHARS

    @classmethod
    def of(
        cls, reader: ApiServerReader, settings: KubernetesToolsetSettings
    ) -> KubernetesToolsetSource:
        """The source over `reader`, scoped and capped by the `HAPI_KUBERNETES*` settings."""
        scope = KubernetesScope.of(
            settings.kubernetes_namespaces_allow,
            settings.kubernetes_namespaces_deny,
            settings.kubernetes_kinds,
        )
        return cls(reader, scope, KubernetesToolset(settings).limits())

    def __call__(self, caller: Caller, recorder: ReadRecorder = NOT_RECORDED) -> Toolset:
        # The session cuts by whole items a little under the dispatcher's
        # cap, so the dispatcher's blunt cut is never needed.
        per_call = max(256, self.limits.max_output_chars - 256)
        scope = self.scope.confined_to(caller.namespace)
        session = KubernetesSession(
            recorder.reading(self.reader, scope.namespaces.allows),
            scope,
            per_call,
            self.investigation_chars,
        )
        tools = (
            KubernetesGet(session),
            KubernetesList(session),
            KubernetesEvents(session),
            KubernetesPodLogs(session),
            KubernetesOwnerChain(session),
            KubernetesNodeStats(session),
        )
        return KubernetesToolset.toolset(tools, self.limits)
