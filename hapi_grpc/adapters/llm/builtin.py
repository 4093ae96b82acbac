"""The built-in analyst: a deterministic stand-in for a language model.

It is the default when no LLM is configured. It drives the same loop through
the same tools as a model would, working only from what it is given: the
facts in the user message (`prompt.read_facts`), the tools' JSON results and
the service's record of what they read (`domain.observed`). Each call looks
at these and takes the next step:

1. search the catalog with "<signal_type> <severity>" and the component;
2. take the best match whose required parameters it can fill from the facts
   (namespace, resource name, node, labels) and schema defaults, and validate;
3. on errors, apply what the validator suggests (allowed values, examples,
   bounds, defaults) and validate again while attempts remain, moving to the
   next match when nothing changes;
4. answer the ADR-038 JSON contract: the validated selection, or none.

It decides from the catalog's declarations, not from words in descriptions:
a match whose declared preconditions the search says were not met on what
the tools read is passed over before it is validated, one the validation
tool refuses to automate (a precondition or invariant failed) too, and a
workflow that changes the cluster is never selected without evidence read
from the cluster: then only a `read_only` workflow may be selected, or none.

It says no language model was used; its confidence is the catalog's. With
cluster tools it reads the evidence first (`builtin_evidence`), targets what
the owner chain names, fills parameters from what it read (`builtin_parameters`)
and cites it in `root_cause_assessment`; it consults the target's remediation
history (`builtin_history`) and handles recovery (`builtin_recovery`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hapi_grpc.adapters.llm.builtin_evidence import GET, Findings, exchanges, plan
from hapi_grpc.adapters.llm.builtin_history import HistoryView, history_step
from hapi_grpc.adapters.llm.builtin_parameters import Facts, fix_parameters
from hapi_grpc.adapters.llm.builtin_recovery import RecoveryView, read_only_fallback
from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.domain.llm import ChatMessage, LLMResponse, ToolCall, ToolChoice, ToolDefinition
from hapi_grpc.domain.observed import Observed
from hapi_grpc.domain.prompt import read_facts
from hapi_grpc.domain.toolsets.jsontext import compact_json
from hapi_grpc.domain.toolsets.prometheus.tools import RANGE_TOOL as RANGE
from hapi_grpc.domain.toolsets.workflow_catalog.tools import SEARCH_TOOL, VALIDATE_TOOL

__all__ = ["BuiltinAnalyst"]

_SEVERITIES = frozenset(Severity)
_RISKS = frozenset(RiskLevel)
_MAX_ALTERNATIVES = 3
_APPS_KINDS = frozenset({"deployment", "statefulset", "daemonset", "replicaset"})


class BuiltinAnalyst:
    """`LLMProvider` that matches the signal to a catalog workflow by rules."""

    name = "builtin"
    model = "builtin"
    uses_language_model = False

    def __init__(self, observed: Observed | None = None) -> None:
        self._observed = observed if observed is not None else Observed()

    def reading(self, observed: Observed) -> BuiltinAnalyst:
        """The analyst for one investigation: it reads what its tool calls recorded."""
        return BuiltinAnalyst(observed)

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolDefinition],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> LLMResponse:
        """The next step; instant, so it needs no timeout and cannot be cancelled midway."""
        # tool_choice "none" (the last turn): answer with what is known.
        offered = set() if tool_choice == "none" else {tool.name for tool in tools}
        return _Turn(messages, offered, self._observed).next()

    async def close(self) -> None:
        """Nothing to release."""


class _Turn:
    """Decides the next step from the conversation so far."""

    def __init__(self, messages: list[ChatMessage], offered: set[str], observed: Observed) -> None:
        users = [m for m in messages if m.role == "user"]
        # The user message is parsed once per turn, for both readings of it.
        facts = read_facts(users[0].content if users else "")
        self.facts = Facts.of(facts)
        self.recovery = RecoveryView.of(facts) if users else None
        self.offered = offered
        self.corrected = len(users) > 1  # the engine rejected an earlier answer
        self.exchanges = exchanges(messages)
        self.step = sum(1 for m in messages if m.role == "assistant") + 1
        self.observed = observed
        self.findings: Findings | None = None
        self.objections: list[str] = []  # why candidate workflows were not selected
        self.history = HistoryView.read(self.exchanges)  # the target's past remediations

    def next(self) -> LLMResponse:
        if self.corrected:
            return self._answer(None, [], "the service did not accept the rule-based answer")
        if GET in self.offered and self.facts.name:
            read = plan(
                self.facts.kind,
                self.facts.namespace,
                self.facts.name,
                self.facts.signal_type,
                self.exchanges,
                self.observed,
            )
            if isinstance(read, tuple):
                return self._call(*read)
            if read.evidence:
                self.findings = read
                self.facts = _with_findings(self.facts, read)
                usage = self._memory_usage(read)
                if usage is not None:
                    return usage
        if (step := history_step(self)) is not None:  # the target's history, read once
            return step
        searches = [e for e in self.exchanges if e.name == SEARCH_TOOL]
        if not searches:
            if SEARCH_TOOL not in self.offered or not self.facts.signal_type:
                return self._answer(None, [], "no workflow search was possible")
            return self._call(SEARCH_TOOL, self._search_arguments())
        found = searches[0].result  # a second search is the recovery's fallback
        if "error" in found:
            return self._answer(None, [], "the workflow catalog was unavailable")
        hits = [h for h in found.get("workflows", []) if isinstance(h, dict)]
        if not hits:
            return self._answer(None, [], "no catalog workflow matches the signal")
        for hit in hits:
            reason = self._objection(hit)
            if reason is not None:
                self.objections.append(reason)
                continue
            step = self._try(hit)
            if step is not None:
                return step
        step = read_only_fallback(self, [s.result for s in searches]) if self.recovery else None
        if step is not None:
            return step
        if self.objections:
            return self._answer(
                None, hits, "the evidence read does not support any candidate workflow"
            )
        return self._answer(None, hits, "no matching workflow could be filled and validated")

    def _search_arguments(self) -> dict[str, Any]:
        query = " ".join(p for p in (self.facts.signal_type, self.facts.severity) if p)
        args: dict[str, Any] = {"query": query}
        if self.facts.component:
            args["component"] = self.facts.component
        return args

    def _memory_usage(self, found: Findings) -> LLMResponse | None:
        """For a container killed at its memory limit, read its usage over hours once
        (when Prometheus is offered): whether it levels off or keeps growing."""
        if not (found.memory_limit and found.pod and RANGE in self.offered):
            return None
        if any(e.name == RANGE for e in self.exchanges):
            return None
        namespace = found.pod.partition("/")[0]
        selector = f'namespace="{namespace}",container="{found.container}"'  # every replica
        return self._call(
            RANGE,
            {"query": f"container_memory_working_set_bytes{{{selector}}}", "range": "6h"},
        )

    def _objection(self, hit: dict[str, Any]) -> str | None:
        """Why `hit` is passed over before validation: its declarations, not its prose."""
        workflow = str(hit.get("workflow_id", ""))
        failed = self.recovery.objection(workflow) if self.recovery else None
        failed = failed or self.history.objection(hit, self.facts.signal_type)
        if failed is not None:  # a recovery does not repeat a failed approach
            return failed
        unmet = hit.get("premise_not_met")
        if isinstance(unmet, list) and unmet:
            return f"{workflow}: " + "; ".join(str(u) for u in unmet[:3])
        read = any(
            e.name.startswith("kubernetes_") and e.result.get("cluster_data")
            for e in self.exchanges
        )
        if hit.get("read_only") is not True and not read:
            return (
                f"{workflow} changes the cluster and nothing was read from the cluster to"
                " show its premise (the alert text alone is not evidence)"
            )
        return None

    def _try(self, hit: dict[str, Any]) -> LLMResponse | None:
        """The next step for this catalog match, or None to move on to the next one."""
        workflow_id = str(hit.get("workflow_id", ""))
        specs = hit.get("parameters")
        specs = [s for s in specs if isinstance(s, dict)] if isinstance(specs, list) else []
        checks = [
            e
            for e in self.exchanges
            if e.name == VALIDATE_TOOL and e.arguments.get("workflow_id") == workflow_id
        ]
        if not checks:
            filled = self.facts.fill(specs)
            if filled is None or VALIDATE_TOOL not in self.offered:
                return None
            return self._call(VALIDATE_TOOL, {"workflow_id": workflow_id, "parameters": filled})
        last = checks[-1]
        verdict = last.result
        proposed = last.arguments.get("parameters")
        proposed = proposed if isinstance(proposed, dict) else {}
        if verdict.get("automation") == "refused":
            # Valid, but the service will not automate it here: say why, try the next.
            self.objections.append(str(verdict.get("refused_because", workflow_id))[:600])
            return None
        if verdict.get("status") == "valid":
            parameters = verdict.get("parameters", proposed)
            return self._answer(hit, [], "", parameters=parameters)
        if "error" in verdict or verdict.get("attempts_left") == 0:
            return self._answer(None, [hit], "the parameters could not be validated")
        determined = frozenset(
            str(s.get("name"))
            for s in specs
            if self.facts.value_for(str(s.get("name"))) is not None
        )
        fixed = fix_parameters(proposed, verdict.get("errors", []), specs, determined)
        if fixed is None or any(fixed == c.arguments.get("parameters") for c in checks):
            return None
        return self._call(VALIDATE_TOOL, {"workflow_id": workflow_id, "parameters": fixed})

    # --- replies ---------------------------------------------------------------------

    def _call(self, tool: str, arguments: dict[str, Any]) -> LLMResponse:
        call = ToolCall(id=f"builtin-{self.step}", name=tool, arguments=compact_json(arguments))
        return LLMResponse(
            tool_calls=(call,), model=BuiltinAnalyst.model, finish_reason="tool_calls"
        )

    def _answer(
        self,
        hit: dict[str, Any] | None,
        others: list[dict[str, Any]],
        why_none: str,
        *,
        parameters: dict[str, Any] | None = None,
    ) -> LLMResponse:
        f = self.facts
        resource = "/".join(p for p in (f.kind, f.name) if p) or "the reported resource"
        where = f" in namespace {f.namespace}" if f.namespace else ""
        signal = f.signal_type or "unknown"
        severity = f.severity if f.severity in _SEVERITIES else Severity.MEDIUM
        found = self.findings
        warnings = [
            "No language model was used: rule-based reading of evidence from the cluster"
            " (read-only Kubernetes tools) and rule-based workflow match."
            if found
            else "No language model was used: rule-based workflow match without root cause"
            " analysis. The reported signal may be a symptom of another cause."
        ]
        if f.severity not in _SEVERITIES:
            warnings.append("The signal reported no severity; medium was assumed.")
        if hit is not None:
            confidence = _confidence(hit)
            summary = (
                f"Rule-based match (no language model was used): the {signal} signal on"
                f" {resource}{where} matches catalog workflow {hit.get('workflow_id')!s}"
                f" with match confidence {confidence:.2f}."
            )
            selected: dict[str, Any] | None = {
                "workflow_id": hit.get("workflow_id"),
                "version": hit.get("version", ""),
                "confidence": confidence,
                "rationale": (
                    f"Catalog workflow for signal type {signal} (match confidence"
                    f" {confidence:.2f}); parameters taken from the incident's facts and the"
                    " schema defaults."
                ),
                "estimated_risk": hit.get("estimated_risk")
                if hit.get("estimated_risk") in _RISKS
                else RiskLevel.MEDIUM,
                "parameters": parameters or {},
            }
        else:
            summary = (
                f"Rule-based match (no language model was used): no workflow selected for the"
                f" {signal} signal on {resource}{where}: {why_none}."
            )
            selected = None
        if found:
            support = [s for s in (found.config_error, found.probe_failure) if s]
            cited = [*found.evidence, *(s for s in support if s not in found.evidence)]
            assessment = (
                "Evidence read from the cluster (rule-based, no language model was used): "
                + "; ".join(cited)
                + "."
            )
        else:
            assessment = (
                f"Not independently assessed (no language model was used); the reported"
                f" {signal} signal is taken at face value."
            )
        assessment += self.recovery.history() if self.recovery else ""
        if self.objections:
            assessment += (
                " Not remediated automatically: " if hit is None else " Passed over: "
            ) + "; ".join(dict.fromkeys(self.objections))
            if hit is None:
                warnings.append(
                    "The evidence does not support the premise of any candidate workflow;"
                    " the candidates are listed as alternatives for review."
                )
        answer = {
            "analysis_summary": summary,
            "root_cause_assessment": assessment,
            "rca_severity": severity,
            "selected_workflow": selected,
            "alternative_workflows": [
                {
                    "workflow_id": other.get("workflow_id"),
                    "confidence": _confidence(other),
                    "rationale": "catalog match",
                }
                for other in others[:_MAX_ALTERNATIVES]
            ],
            "warnings": warnings,
            "context_used": {
                "cluster_state": found.evidence[0][:500] if found else "not assessed",
                "resource_availability": "not assessed",
                "blast_radius": f"{resource}{where}" if f.name else "not assessed",
            },
        }
        target = found.target_resource() if found else None
        if target is not None:
            answer["target_resource"] = target
        elif f.name:
            answer["target_resource"] = {
                "namespace": f.namespace,
                "kind": f.kind,
                "name": f.name,
                "api_group": "apps" if f.kind.lower() in _APPS_KINDS else "",
            }
        return LLMResponse(
            content=json.dumps(answer, ensure_ascii=False),
            model=BuiltinAnalyst.model,
            finish_reason="stop",
        )


# --- helpers ------------------------------------------------------------------------


def _with_findings(facts: Facts, findings: Findings) -> Facts:
    """The facts as the evidence corrects them: the resource to remediate, the limit hit."""
    target = findings.target_resource()
    text = facts.error_text
    if findings.memory_limit:
        text = f"memory limit {findings.memory_limit}. {text}"
    if target is None:
        return dataclasses.replace(facts, error_text=text)
    return dataclasses.replace(
        facts,
        kind=target["kind"],
        name=target["name"],
        namespace=target["namespace"],
        component=target["kind"].lower(),
        error_text=text,
    )


def _confidence(hit: dict[str, Any]) -> float:
    value = hit.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, min(1.0, float(value)))
    return 0.0
