"""What the service does for a caller: the one application object behind the RPCs.

Design notes: docs/internals.md (`application/service.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from google.protobuf.message import Message

from hapi_grpc.application.idempotency import REUSE_KINDS, Finished, IdempotencyCoordinator
from hapi_grpc.application.kept_results import pack, unpack, worth_keeping
from hapi_grpc.application.outcomes import OutcomeService
from hapi_grpc.domain import result as r
from hapi_grpc.domain.catalog import WorkflowCatalog, WorkflowSchema
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import IncidentConflictError
from hapi_grpc.domain.fingerprint import incident_fingerprint
from hapi_grpc.domain.history import OutcomeAck, OutcomeReport
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.investigation.engine import EventSink, InvestigationEngine
from hapi_grpc.domain.parameters import ValidationOutcome
from hapi_grpc.domain.recording import NOT_RECORDED, ReadRecorder
from hapi_grpc.domain.tenancy import Caller, Exposure
from hapi_grpc.domain.workflow_validation import validate_workflow_parameters
from hapi_grpc.observability import metrics
from hapi_grpc.observability.logging import log_context

__all__ = ["Application", "MessageCodec", "idempotency_key"]

M = TypeVar("M", bound=Message)

_REUSED = {kind: metrics.ANALYSES_REUSED.labels(kind=kind) for kind in REUSE_KINDS}
# Counters of the RPC's verdicts, resolved once: `labels()` locks on every call.
_RPC_VALIDATIONS = {
    valid: metrics.VALIDATION_ATTEMPTS.labels(source="rpc", result="valid" if valid else "invalid")
    for valid in (True, False)
}


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

    def shown(self, message: M, exposure: Exposure) -> M | None:
        """The message as a caller with `exposure` may see it; None: not at all."""
        ...


def idempotency_key(incident: Incident, caller: str = "") -> str:
    """What calls share an investigation under: the remediation id within its
    tenant (the incident's namespace and the caller: another tenant's id is
    another investigation, never joined, replaced or revealed), and for a
    recovery its attempt, so each attempt is an investigation of its own. ('#'
    is not allowed in a remediation id: no id can collide with a recovery's.)"""
    key = Caller(caller).tenant(incident.signal.namespace).key(incident.remediation_id)
    recovery = incident.recovery
    if recovery is None:
        return key
    return f"{key}#recovery-{recovery.attempt_number}"


class CaseCapture(Protocol):
    """Where finished investigations and their outcomes are captured (`hapi_grpc.capture`)."""

    def recorder(self) -> ReadRecorder: ...

    def finished(
        self, incident: Incident, caller: Caller, result: r.AnalysisResult, recorder: Any
    ) -> None:
        """Capture the investigation without waiting for anything."""
        ...

    def outcome(self, report: OutcomeReport) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Answer(Generic[M]):
    result: M  # the result message, stamped and shaped
    replay: list[M]  # events this caller did not see as they happened


class Application(Generic[M]):
    """Analyses with `engine` (shared and kept by `idempotency`), validates parameters
    against `catalog`, and keeps decisions and outcomes through `outcomes`."""

    def __init__(
        self,
        engine: InvestigationEngine,
        catalog: WorkflowCatalog,
        outcomes: OutcomeService,
        codec: MessageCodec[M],
        idempotency: IdempotencyCoordinator[r.AnalysisEvent] | None = None,
        capture: CaseCapture | None = None,
    ) -> None:
        self.engine = engine
        self.capture = capture
        self.catalog = catalog
        self.outcomes = outcomes
        self._codec = codec
        # Without a store: concurrent calls on this server still share one investigation.
        self.idempotency = idempotency or IdempotencyCoordinator()

    async def analyze(self, incident: Incident, caller: Caller, budget: Budget, force: bool) -> M:
        """The result message for `incident` within `budget`, as `caller` may see it."""
        with (
            log_context(remediation_id=incident.remediation_id, incident_id=incident.incident_id),
            budget_scope(budget),
        ):
            answer = await self._answer(incident, caller, force)
        return answer.result

    async def analyze_stream(
        self, incident: Incident, caller: Caller, budget: Budget, force: bool
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
                self._answer(incident, caller, force, on_event=queue.put_nowait)
            )
        event = self._codec.event
        getter: asyncio.Future[r.AnalysisEvent] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    if (shown := self._shown(event(getter.result()), caller)) is not None:
                        yield shown
                    continue
                getter.cancel()
                # The investigation ended: drain what it queued, then the replay and the result.
                while not queue.empty():
                    if (shown := self._shown(event(queue.get_nowait()), caller)) is not None:
                        yield shown
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

    async def validate(
        self, workflow_id: str, parameters: Mapping[str, Any], budget: Budget
    ) -> tuple[WorkflowSchema, ValidationOutcome]:
        """The workflow's schema and the verdict on a caller's `parameters`."""
        with budget_scope(budget):
            schema, outcome = await validate_workflow_parameters(
                self.catalog, workflow_id, parameters
            )
        _RPC_VALIDATIONS[outcome.valid].inc()
        return schema, outcome

    async def report(self, report: OutcomeReport, budget: Budget) -> OutcomeAck:
        """The stored acknowledgement of an outcome report (see `OutcomeService.report`)."""
        ack = await self.outcomes.report(report, budget)
        if self.capture is not None and not ack.already_recorded:
            self.capture.outcome(report)
        return ack

    def drain(self, seconds: float) -> None:
        """Running investigations answer within `seconds` (a graceful shutdown)."""
        self.engine.drain(seconds)

    async def close(self) -> None:
        """Close what the application holds, each failure ignored."""
        for part in (
            self.idempotency,
            self.outcomes.history,
            self.engine,
            self.catalog,
            self.capture,
        ):
            close = getattr(part, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    def _shown(self, message: M, caller: Caller) -> M | None:
        """The one place a message meets the caller's exposure on its way out."""
        return self._codec.shown(message, caller.exposure)

    async def _answer(
        self,
        incident: Incident,
        caller: Caller,
        force: bool,
        on_event: Callable[[r.AnalysisEvent], None] | None = None,
    ) -> _Answer[M]:
        """The result of this incident (joined, kept from an earlier call, or investigated),
        and the events to replay when `on_event` did not see them as they happened."""
        key = idempotency_key(incident, caller.name)
        try:
            outcome = await self.idempotency.run(
                key,
                # Computed when first needed (see IdempotencyCoordinator.run).
                functools.partial(incident_fingerprint, incident),
                functools.partial(self._investigate, incident, caller),
                force=force,
                on_event=on_event,
            )
        except IncidentConflictError as exc:
            # Name the id (and attempt) as the caller sent them, not the internal key.
            sent = repr(incident.remediation_id)
            if incident.recovery is not None:
                sent += f" (recovery attempt {incident.recovery.attempt_number})"
            raise IncidentConflictError(str(exc).replace(repr(key), sent, 1)) from None
        # Every caller has its own copy: the message the result was encoded from for
        # one caller of this replica, decoded for the others; the events decoded
        # only when it replays them.
        replay_needed = not outcome.live and on_event is not None
        codec = self._codec
        replay: list[M] = []
        if outcome.message is not None and not replay_needed:
            result = outcome.message
        else:
            result, replay = unpack(codec.message_type, outcome.payload, with_events=replay_needed)
        codec.stamp(result, outcome.completed_at, outcome.reused is not None)
        if outcome.reused is not None:
            _REUSED[outcome.reused].inc()
        shown = self._shown(result, caller)
        assert shown is not None  # a result is never withheld, only stripped
        return _Answer(
            shown, [m for m in (self._shown(e, caller) for e in replay) if m is not None]
        )

    async def _investigate(self, incident: Incident, caller: Caller, sink: EventSink) -> Finished:
        """Investigate for `caller` (the first to ask), keep its decision, pack the
        result and its events for everyone who waits or asks again."""
        events: list[r.AnalysisEvent] = []

        async def record(event: r.AnalysisEvent) -> None:
            events.append(event)
            await sink(event)

        capture = self.capture
        recorder = capture.recorder() if capture is not None else NOT_RECORDED
        result = await self.engine.investigate(
            incident, caller=caller, on_event=record, recorder=recorder
        )
        await self.outcomes.keep_decision(incident, result, caller)
        if capture is not None:  # written off the response path
            capture.finished(incident, caller, result, recorder)
        # The result holds the same tool calls and attempts as the events:
        # each is converted once, while both are alive (ids stay unique).
        converted: dict[int, Message] = {}
        frames = [self._codec.event(e, converted) for e in events]
        message = self._codec.result(result, converted)
        return Finished(pack(message, frames), worth_keeping(result), message)
