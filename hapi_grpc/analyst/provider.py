"""`BuiltinAnalyst`: the `LLMProvider` that drives the investigation loop by rules.

Design notes: docs/internals.md (`analyst/provider.py`).
"""

from __future__ import annotations

from typing import Any

from hapi_grpc.analyst.actions import Situation
from hapi_grpc.analyst.answer import Answer
from hapi_grpc.analyst.candidates import Outcome, next_step
from hapi_grpc.analyst.conversation import GET, Exchange, Reads, Step, exchanges
from hapi_grpc.analyst.evidence import plan
from hapi_grpc.analyst.findings import Findings
from hapi_grpc.analyst.history import HistoryView, history_read
from hapi_grpc.analyst.recovery import FALLBACK_SEARCH, RecoveryView
from hapi_grpc.analyst.subject import Subject
from hapi_grpc.domain.incident import Incident, SignalInfo
from hapi_grpc.domain.llm import ChatMessage, LLMResponse, ToolCall, ToolChoice, ToolDefinition
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.toolsets.jsontext import compact_json
from hapi_grpc.domain.toolsets.workflow_catalog.tools import SEARCH_TOOL, VALIDATE_TOOL

__all__ = ["BuiltinAnalyst"]

_NO_INCIDENT = Incident(remediation_id="", signal=SignalInfo(signal_type=""))


def _hits(search: Exchange) -> list[dict[str, Any]]:
    """The workflows a search returned."""
    return [h for h in search.result.get("workflows") or [] if isinstance(h, dict)]


class BuiltinAnalyst:
    """`LLMProvider` that decides by rules from the incident and what its tools read."""

    name = "builtin"
    model = "builtin"
    uses_language_model = False

    def __init__(self, incident: Incident = _NO_INCIDENT, observed: Observed | None = None) -> None:
        self._incident = incident
        self._observed = observed if observed is not None else Observed()

    def investigating(self, incident: Incident, observed: Observed) -> BuiltinAnalyst:
        """The analyst for one investigation of `incident`, whose tools fill `observed`."""
        return BuiltinAnalyst(incident, observed)

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolDefinition],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> LLMResponse:
        """The next step; instant, so it needs no timeout and cannot be cancelled midway."""
        offered = frozenset() if tool_choice == "none" else frozenset(t.name for t in tools)
        return _Turn(self._incident, self._observed, messages, offered).next()

    async def close(self) -> None:
        """Nothing to release."""


class _Turn:
    """One decision over the conversation so far."""

    def __init__(
        self,
        incident: Incident,
        observed: Observed,
        messages: list[ChatMessage],
        offered: frozenset[str],
    ) -> None:
        self.subject = Subject.of(incident)
        self.reads = Reads(exchanges(messages), observed, offered)
        # A second user message: the engine sent an earlier answer back.
        self.corrected = sum(1 for m in messages if m.role == "user") > 1
        self.step = sum(1 for m in messages if m.role == "assistant") + 1
        self.recovery = RecoveryView.of(incident)
        self.history = HistoryView.read(self.reads.exchanges)
        self.answer = Answer(self.subject, None, self.recovery)

    def next(self) -> LLMResponse:
        if self.corrected:
            return self._answer(None, [], "the service did not accept the rule-based answer")
        findings: Findings | None = None
        if GET in self.reads.offered and self.subject.name:
            found = plan(self.subject, self.reads)
            if isinstance(found, list):
                return self._calls(found)
            findings = self.answer.findings = found
        read = history_read(self.reads, findings, self.subject)
        if read is not None:
            return self._calls([read])
        searches = self.reads.results(SEARCH_TOOL)
        if not searches:
            if SEARCH_TOOL not in self.reads.offered or not self.subject.signal_type:
                return self._answer(None, [], "no workflow search was possible")
            return self._calls([(SEARCH_TOOL, self._search(findings))])
        if "error" in searches[0].result:
            return self._answer(None, [], "the workflow catalog was unavailable")
        hits = _hits(searches[0])
        if not hits and searches[0].arguments != self._search(None):
            # No workflow for the failure found: the reported signal's are weighed
            # (their premises say whether they fit what was found).
            if len(searches) < 2:
                return self._calls([(SEARCH_TOOL, self._search(None))])
            hits = _hits(searches[1])
        if not hits:
            return self._answer(None, [], "no catalog workflow matches the failure found")
        situation = Situation(self.subject, findings or Findings(), self.reads)
        outcome = next_step(hits, situation, self._passed_over, self._validations_left())
        self.answer.objections = outcome.objections
        reply = self._reply(outcome) or self._read_only_fallback(situation)
        if reply is not None:
            return reply
        why = outcome.stop or (
            "the evidence read does not support any candidate workflow"
            if outcome.objections
            else "no matching workflow could be filled and validated"
        )
        return self._answer(None, hits, why)

    def _search(self, findings: Findings | None) -> dict[str, Any]:
        """Search for the failure the reads show, for the resource to remediate (its kind
        as the component when it is not the one reported); the reported signal and
        component when the reads show no other (or `findings` is None)."""
        reported = self.subject.signal_type
        signal = findings.cause(reported) if findings else reported
        query = " ".join(p for p in (signal, self.subject.severity) if p)
        arguments: dict[str, Any] = {"query": query}
        component = self.subject.component
        if findings is not None and signal != reported:
            arguments["signal_type"] = signal
        if findings is not None and findings.target_kind not in ("", self.subject.kind):
            component = findings.target_kind
        if component:
            arguments["component"] = component.lower()
        return arguments

    def _passed_over(self, hit: dict[str, Any]) -> str | None:
        """Why `hit` is not proposed whatever the evidence: a failed execution, the
        target's history, or no cluster evidence for a change to the cluster."""
        workflow = str(hit.get("workflow_id", ""))
        failed = self.recovery.objection(workflow) if self.recovery else None
        failed = failed or self.history.objection(hit, self.subject.signal_type)
        if failed is not None:
            return failed
        if hit.get("read_only") is not True and not self.reads.observed.cluster_evidence:
            return (
                f"{workflow} changes the cluster and nothing was read from the cluster to"
                " show its premise (the alert text alone is not evidence)"
            )
        return None

    def _validations_left(self) -> bool:
        checks = self.reads.results(VALIDATE_TOOL)
        return not checks or checks[-1].result.get("attempts_left", 1) != 0

    def _read_only_fallback(self, situation: Situation) -> LLMResponse | None:
        """In a recovery whose candidates were all passed over: search once for a
        read-only workflow and take it (it cannot repeat the failure)."""
        if self.recovery is None:
            return None
        done = [e for e in self.reads.results(SEARCH_TOOL) if e.arguments == FALLBACK_SEARCH]
        if not done:
            if SEARCH_TOOL not in self.reads.offered:
                return None
            return self._calls([(SEARCH_TOOL, dict(FALLBACK_SEARCH))])
        hits = [h for h in _hits(done[-1]) if h.get("read_only") is True]
        return self._reply(next_step(hits, situation, self._passed_over, self._validations_left()))

    # --- replies ----------------------------------------------------------------------

    def _reply(self, outcome: Outcome) -> LLMResponse | None:
        """The reads or validation the walk asks for, or the answer with its selection."""
        if outcome.steps:
            return self._calls(outcome.steps)
        if outcome.selection is not None:
            return self._answer(outcome.selection.hit, [], "", outcome.selection.parameters)
        return None

    def _calls(self, steps: list[Step]) -> LLMResponse:
        calls = tuple(
            ToolCall(id=f"builtin-{self.step}-{i}", name=tool, arguments=compact_json(arguments))
            for i, (tool, arguments) in enumerate(steps)
        )
        return LLMResponse(tool_calls=calls, model=BuiltinAnalyst.model, finish_reason="tool_calls")

    def _answer(
        self,
        hit: dict[str, Any] | None,
        others: list[dict[str, Any]],
        why_none: str,
        parameters: dict[str, Any] | None = None,
    ) -> LLMResponse:
        return LLMResponse(
            content=self.answer.text(hit, others, why_none, parameters),
            model=BuiltinAnalyst.model,
            finish_reason="stop",
        )
