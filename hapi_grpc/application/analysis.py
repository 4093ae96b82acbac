"""Serving an analysis: shared and kept investigations, replayed and streamed events.

`AnalysisService.analyze` answers one incident with its result;
`AnalysisService.stream` also yields the investigation's events as they
happen. Both go through the `IdempotencyCoordinator`: a retry joins the
investigation in flight or gets the kept result, whose events are replayed
to a stream that did not see them happen. Results are kept as the wire
messages the transport answers with (`MessageCodec`), packed by
`kept_results`, so every caller decodes its own copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from google.protobuf.message import Message

from hapi_grpc.application.kept_results import pack, unpack
from hapi_grpc.domain import result as r
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import IncidentConflictError
from hapi_grpc.domain.idempotency import (
    REUSE_KINDS,
    Finished,
    IdempotencyCoordinator,
    incident_fingerprint,
    worth_keeping,
)
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.engine import EventSink
from hapi_grpc.domain.tenancy import Tenant
from hapi_grpc.observability import metrics
from hapi_grpc.observability.logging import log_context

__all__ = ["AnalysisService", "MessageCodec", "idempotency_key"]

M = TypeVar("M", bound=Message)

_REUSED = {kind: metrics.ANALYSES_REUSED.labels(kind=kind) for kind in REUSE_KINDS}


class Investigator(Protocol):
    """What investigates an incident and records its decision for `caller`."""

    async def investigate(
        self, incident: Incident, *, on_event: EventSink | None = None, caller: str = ""
    ) -> r.AnalysisResult: ...


class MessageCodec(Protocol[M]):
    """How the transport writes an analysis's events and result: one message type for both."""

    message_type: type[M]

    def event(self, event: r.AnalysisEvent, converted: dict[int, Message] | None = None) -> M:
        """The event as a message; tool calls and validation attempts are
        entered into `converted` (by `id()`) for `result` to reuse."""
        ...

    def result(self, result: r.AnalysisResult, converted: dict[int, Message]) -> M:
        """The final result as a message, reusing the events' `converted` parts."""
        ...

    def stamp(self, message: M, completed_at: float, reused: bool) -> None:
        """Set the result message's completion time and whether it was reused."""
        ...


def idempotency_key(incident: Incident, caller: str = "") -> str:
    """What calls share an investigation under: the remediation id within its
    tenant (the incident's namespace and the caller: another tenant's id is
    another investigation, never joined, replaced or revealed), and for a
    recovery its attempt, so each attempt is an investigation of its own. ('#'
    is not allowed in a remediation id: no id can collide with a recovery's.)"""
    key = Tenant(incident.signal.namespace, caller).key(incident.remediation_id)
    recovery = incident.recovery
    if recovery is None:
        return key
    return f"{key}#recovery-{recovery.attempt_number}"


@dataclass(frozen=True, slots=True)
class _Answer(Generic[M]):
    result: M  # the result message, stamped
    replay: list[M]  # events this caller did not see as they happened


class AnalysisService(Generic[M]):
    """Analyses incidents with `engine`, shared and kept by `idempotency`."""

    def __init__(
        self,
        engine: Investigator,
        codec: MessageCodec[M],
        idempotency: IdempotencyCoordinator[r.AnalysisEvent] | None = None,
    ) -> None:
        self._engine = engine
        self._codec = codec
        # Without a store: concurrent calls on this server still share one investigation.
        self._idempotency = idempotency or IdempotencyCoordinator()

    async def analyze(self, incident: Incident, force: bool, budget: Budget, caller: str = "") -> M:
        """The result message for `incident` within `budget`, asked by `caller`
        (the authenticated user name; "" without authentication)."""
        with (
            log_context(remediation_id=incident.remediation_id, incident_id=incident.incident_id),
            budget_scope(budget),
        ):
            answer = await self._answer(incident, force, caller)
        return answer.result

    async def stream(
        self, incident: Incident, force: bool, budget: Budget, caller: str = ""
    ) -> AsyncGenerator[M, None]:
        """The investigation's event messages as they happen, then any it
        learnt of elsewhere (a kept result, another replica), then the result."""
        # Unbounded, but an investigation's events are bounded by its turn and
        # tool-call caps; a shared investigation never waits for a slow reader.
        queue: asyncio.Queue[r.AnalysisEvent] = asyncio.Queue()

        # The task copies the log context and the budget when it is created.
        # They are not held across the yields below: a generator the client
        # abandons is closed from another context, where resetting them fails.
        with (
            log_context(remediation_id=incident.remediation_id, incident_id=incident.incident_id),
            budget_scope(budget),
        ):
            task = asyncio.create_task(
                self._answer(incident, force, caller, on_event=queue.put_nowait)
            )
        event = self._codec.event
        getter: asyncio.Future[r.AnalysisEvent] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield event(getter.result())
                    continue
                getter.cancel()
                # The investigation ended: drain what it queued, then the replay and the result.
                while not queue.empty():
                    yield event(queue.get_nowait())
                answer = task.result()
                for message in answer.replay:
                    yield message
                yield answer.result
                return
        finally:
            if getter is not None:
                getter.cancel()
            # Client gone or deadline hit: leave the investigation; the last
            # caller to leave stops it and its LLM / Data Storage requests.
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _answer(
        self,
        incident: Incident,
        force: bool,
        caller: str,
        on_event: Callable[[r.AnalysisEvent], None] | None = None,
    ) -> _Answer[M]:
        """The result of this incident (joined, kept from an earlier call, or investigated),
        and the events to replay when `on_event` did not see them as they happened."""
        codec = self._codec

        async def investigate(sink: EventSink) -> Finished:
            events: list[r.AnalysisEvent] = []

            async def record(event: r.AnalysisEvent) -> None:
                events.append(event)
                await sink(event)

            result = await self._engine.investigate(incident, on_event=record, caller=caller)
            # The result holds the same tool calls and attempts as the events:
            # each is converted once, while both are alive (ids stay unique).
            converted: dict[int, Message] = {}
            frames = [codec.event(e, converted) for e in events]
            payload = pack(codec.result(result, converted), frames)
            return Finished(payload, worth_keeping(result))

        key = idempotency_key(incident, caller)
        try:
            outcome = await self._idempotency.run(
                key,
                # Computed when first needed (see IdempotencyCoordinator.run).
                functools.partial(incident_fingerprint, incident),
                investigate,
                force=force,
                on_event=on_event,
            )
        except IncidentConflictError as exc:
            # Name the id (and attempt) as the caller sent them, not the internal key.
            sent = repr(incident.remediation_id)
            if incident.recovery is not None:
                sent += f" (recovery attempt {incident.recovery.attempt_number})"
            raise IncidentConflictError(str(exc).replace(repr(key), sent, 1)) from None
        # Every caller decodes its own copy; the events only when it replays them.
        replay_needed = not outcome.live and on_event is not None
        result, replay = unpack(codec.message_type, outcome.payload, with_events=replay_needed)
        codec.stamp(result, outcome.completed_at, outcome.reused is not None)
        if outcome.reused is not None:
            _REUSED[outcome.reused].inc()
        return _Answer(result, replay)
