"""The built-in analyst: a deterministic stand-in for a language model.

It is the default when no LLM is configured. It drives the same loop through
the same tools as a model would, working only from the conversation it is
given: the facts in the user message (`prompt.read_facts`) and the tools'
JSON results. Each call looks at the conversation so far and takes the next
step:

1. search the catalog with "<signal_type> <severity>" and the component;
2. take the best match whose required parameters it can fill from the facts
   (namespace, resource name, node, labels) and schema defaults, and validate;
3. on errors, apply what the validator suggests (allowed values, examples,
   bounds, defaults) and validate again while attempts remain, moving to the
   next match when nothing changes;
4. answer the ADR-038 JSON contract: the validated selection, or none.

It is honest about what it is: the answer says that no language model was
used, and its confidence is the catalog's match confidence. Without cluster
tools it makes no root cause analysis. When the read-only `kubernetes` tools
are offered it reads the evidence first (`builtin_evidence`), targets the
resource the owner chain names (the Deployment, or the Node), fills
parameters from what it read (the memory limit hit -> twice that) and cites
the evidence (object, field, value) in `root_cause_assessment`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hapi_grpc.adapters.llm.builtin_evidence import GET, Findings, plan
from hapi_grpc.adapters.llm.builtin_premises import objection, supporting
from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.domain.llm import ChatMessage, LLMResponse, ToolCall, ToolChoice, ToolDefinition
from hapi_grpc.domain.prompt import CLUSTER, ERROR_DETAILS, SIGNAL, read_facts
from hapi_grpc.domain.toolsets.jsontext import compact_json
from hapi_grpc.domain.toolsets.workflow_catalog import SEARCH_TOOL, VALIDATE_TOOL

__all__ = ["BuiltinAnalyst"]

_SEVERITIES = frozenset(Severity)
_RISKS = frozenset(RiskLevel)
_MAX_ALTERNATIVES = 3
_NAMESPACE_PARAMS = frozenset({"NAMESPACE", "TARGET_NAMESPACE", "RESOURCE_NAMESPACE"})
_NAME_PARAMS = frozenset({"TARGET_RESOURCE_NAME", "RESOURCE_NAME", "TARGET_NAME"})
_KIND_PARAMS = frozenset({"TARGET_RESOURCE_KIND", "RESOURCE_KIND", "TARGET_KIND"})
_APPS_KINDS = frozenset({"deployment", "statefulset", "daemonset", "replicaset"})
# A pod created by a Deployment: <deployment>-<replicaset hash>-<pod suffix>.
_DEPLOYMENT_POD_RE = re.compile(r"^(?P<name>[a-z0-9][-a-z0-9.]*?)-[a-z0-9]{5,10}-[a-z0-9]{5}$")
_MEMORY_LIMIT_RE = re.compile(
    r"limit\D{0,24}?(?P<value>\d{1,6})\s?(?P<unit>Ki|Mi|Gi|Ti)\b", re.IGNORECASE
)
_GOOD_REVISION_RE = re.compile(
    r"revision (?P<after>\d{1,9}) (?:was|is) (?:healthy|good|working|stable)"
    r"|(?:last good|known good|healthy|previous) revision (?P<before>\d{1,9})",
    re.IGNORECASE,
)
_SUGGESTED_RE = re.compile(r"did you mean '(?P<value>[^']{1,200})'")
_EXAMPLE_RE = re.compile(r"\(e\.g\. (?P<value>'[^']{0,200}'|-?\d+(?:\.\d+)?|true|false)\)")


@dataclass(frozen=True)
class _Facts:
    signal_type: str
    severity: str
    component: str
    namespace: str
    kind: str
    name: str
    error_text: str
    labels: dict[str, str]

    @classmethod
    def read(cls, text: str) -> _Facts:
        facts = read_facts(text)
        signal = facts.get(SIGNAL, {})
        errors = facts.get(ERROR_DETAILS, {})
        kind, _, name = signal.get("Resource", "").rpartition("/")
        return cls(
            signal_type=signal.get("Signal Type", ""),
            severity=signal.get("Severity", "").lower(),
            component=signal.get("Component", ""),
            namespace=signal.get("Namespace", ""),
            kind=kind,
            name=name,
            error_text=" ".join(errors.get(k, "") for k in ("Error Message", "Description")),
            labels=_parse_labels(facts.get(CLUSTER, {}).get("Signal Labels", "")),
        )


@dataclass(frozen=True)
class _Exchange:
    """One tool call of the conversation and its parsed result."""

    name: str
    arguments: dict[str, Any]
    result: dict[str, Any]


class BuiltinAnalyst:
    """`LLMProvider` that matches the signal to a catalog workflow by rules."""

    name = "builtin"
    model = "builtin"
    uses_language_model = False

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
        return _Turn(messages, offered).next()

    async def close(self) -> None:
        """Nothing to release."""


class _Turn:
    """Decides the next step from the conversation so far."""

    def __init__(self, messages: list[ChatMessage], offered: set[str]) -> None:
        users = [m for m in messages if m.role == "user"]
        self.facts = _Facts.read(users[0].content if users else "")
        self.offered = offered
        self.corrected = len(users) > 1  # the engine rejected an earlier answer
        self.exchanges = _exchanges(messages)
        self.step = sum(1 for m in messages if m.role == "assistant") + 1
        self.findings: Findings | None = None
        self.objections: list[str] = []  # why candidate workflows were not selected

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
            )
            if isinstance(read, tuple):
                return self._call(*read)
            if read.evidence:
                self.findings = read
                self.facts = _with_findings(self.facts, read)
        searches = [e for e in self.exchanges if e.name == SEARCH_TOOL]
        if not searches:
            if SEARCH_TOOL not in self.offered or not self.facts.signal_type:
                return self._answer(None, [], "no workflow search was possible")
            return self._call(SEARCH_TOOL, self._search_arguments())
        found = searches[-1].result
        if "error" in found:
            return self._answer(None, [], "the workflow catalog was unavailable")
        hits = [h for h in found.get("workflows", []) if isinstance(h, dict)]
        if not hits:
            return self._answer(None, [], "no catalog workflow matches the signal")
        refused: list[str] = []
        for hit in hits:
            reason = objection(hit, self.findings)
            if reason is not None:
                refused.append(reason)
                continue
            step = self._try(hit)
            if step is not None:
                return step
        if refused:
            self.objections = refused
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
            filled = self._fill(specs)
            if filled is None or VALIDATE_TOOL not in self.offered:
                return None
            return self._call(VALIDATE_TOOL, {"workflow_id": workflow_id, "parameters": filled})
        last = checks[-1]
        verdict = last.result
        proposed = last.arguments.get("parameters")
        proposed = proposed if isinstance(proposed, dict) else {}
        if verdict.get("status") == "valid":
            parameters = verdict.get("parameters", proposed)
            return self._answer(hit, [], "", parameters=parameters)
        if "error" in verdict or verdict.get("attempts_left") == 0:
            return self._answer(None, [hit], "the parameters could not be validated")
        fixed = _fix(proposed, verdict.get("errors", []), specs)
        if fixed is None or any(fixed == c.arguments.get("parameters") for c in checks):
            return None
        return self._call(VALIDATE_TOOL, {"workflow_id": workflow_id, "parameters": fixed})

    # --- parameters from facts --------------------------------------------------------

    def _fill(self, specs: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Parameters from the facts and defaults; None when a required one is unknown."""
        filled: dict[str, Any] = {}
        for spec in specs:
            name = str(spec.get("name", ""))
            value = self._from_facts(name)
            if value is None:
                value = spec.get("default")
            if value is None:
                if spec.get("required"):
                    return None
                continue
            filled[name] = _typed(value, spec.get("type"))
        return filled

    def _from_facts(self, name: str) -> Any:
        f = self.facts
        kind = f.kind.lower()
        if name in _NAMESPACE_PARAMS:
            return f.namespace or None
        if name in _NAME_PARAMS:
            return f.name or None
        if name in _KIND_PARAMS:
            return f.kind or None
        if name == "MEMORY_LIMIT_NEW":
            return _raised_memory_limit(f.error_text)
        if name in ("REVISION", "TARGET_REVISION", "ROLLBACK_REVISION"):
            return _good_revision(f.error_text)
        if kind and f.name and name == f"{kind.upper()}_NAME":
            return f.name
        if name == "DEPLOYMENT_NAME" and kind == "pod":
            match = _DEPLOYMENT_POD_RE.match(f.name)
            if match:
                return match.group("name")
        labelled = _from_labels(name, f.labels)
        if labelled is not None:
            return labelled
        return _from_text(name, f.error_text)

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
            cited = found.evidence + [s for s in supporting(found) if s not in found.evidence]
            assessment = (
                "Evidence read from the cluster (rule-based, no language model was used): "
                + "; ".join(cited)
            )
            if self.objections:
                assessment += ". Not remediated automatically: " + "; ".join(
                    dict.fromkeys(self.objections)
                )
                warnings.append(
                    "The evidence does not support the premise of any candidate workflow;"
                    " the candidates are listed as alternatives for review."
                )
        else:
            assessment = (
                f"Not independently assessed (no language model was used); the reported"
                f" {signal} signal is taken at face value."
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


def _with_findings(facts: _Facts, findings: Findings) -> _Facts:
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


def _exchanges(messages: Iterable[ChatMessage]) -> list[_Exchange]:
    calls: dict[str, ToolCall] = {}
    exchanges: list[_Exchange] = []
    for message in messages:
        if message.role == "assistant":
            calls.update((call.id, call) for call in message.tool_calls)
        elif message.role == "tool":
            call = calls.get(message.tool_call_id)
            if call is not None:
                exchanges.append(
                    _Exchange(call.name, _object(call.arguments), _object(message.content))
                )
    return exchanges


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _confidence(hit: dict[str, Any]) -> float:
    value = hit.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, min(1.0, float(value)))
    return 0.0


def _parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in text.split(", "):
        key, sep, value = item.partition("=")
        if sep and key:
            labels[key.strip()] = value.strip()
    return labels


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _from_labels(name: str, labels: dict[str, str]) -> str | None:
    """A signal label named like the parameter (`container` for CONTAINER_NAME)."""
    wanted = _normalise(name)
    for key, value in labels.items():
        have = _normalise(key)
        if value and have and wanted in (have, have + "name"):
            return value
    return None


def _from_text(name: str, text: str) -> str | None:
    """An identifier the error text names after the parameter.

    For PULL_SECRET_NAME, kubelet's 'Unable to retrieve some image pull
    secrets (regcred)' gives 'regcred'. Only `*_NAME` parameters qualify; the
    validator still checks whatever is found against the schema's pattern.
    """
    words = name.lower().split("_")
    if len(words) < 2 or words[-1] != "name" or not text:
        return None
    phrase = r"[ _-]?".join(re.escape(w) for w in words[:-1])
    match = re.search(
        rf"\b{phrase}s?\b\W{{0,3}}[\"'(]?(?P<value>[A-Za-z0-9][-A-Za-z0-9._]{{0,252}})",
        text[:4000],
        re.IGNORECASE,
    )
    return match.group("value") if match else None


def _good_revision(text: str) -> int | None:
    """A revision the error text calls good ('revision 6 was healthy'); never a guess."""
    match = _GOOD_REVISION_RE.search(text[:4000])
    if match is None:
        return None
    return int(match.group("after") or match.group("before"))


def _raised_memory_limit(text: str) -> str | None:
    """Double the memory limit stated in the error text ('limit 256Mi' -> '512Mi')."""
    match = _MEMORY_LIMIT_RE.search(text)
    if match is None:
        return None
    value = int(match.group("value")) * 2
    unit = match.group("unit")[0].upper() + "i"
    units = ("Ki", "Mi", "Gi", "Ti")
    index = units.index(unit)
    while index < len(units) - 1 and value >= 1024 and value % 1024 == 0:
        value //= 1024
        index += 1
    return f"{value}{units[index]}"


def _typed(value: Any, kind: Any) -> Any:
    """Facts are text; give numbers and booleans their schema type when they parse."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if kind == "integer" and re.fullmatch(r"-?\d{1,18}", text):
        return int(text)
    if kind in ("float", "number") and re.fullmatch(r"-?\d{1,18}(\.\d{1,18})?", text):
        return float(text)
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return value


def _fix(
    proposed: dict[str, Any], errors: list[Any], specs: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Apply the validator's hints; None when a required parameter cannot be fixed."""
    by_name = {str(s.get("name")): s for s in specs}
    fixed = dict(proposed)
    for error in errors:
        if not isinstance(error, dict):
            continue
        name = str(error.get("parameter", ""))
        spec = by_name.get(name, {})
        value = _suggestion(str(error.get("code", "")), str(error.get("message", "")), spec)
        if value is not None:
            fixed[name] = value
        elif spec.get("required"):
            return None
        else:
            fixed.pop(name, None)  # an optional parameter is better left out
    return fixed


def _suggestion(code: str, message: str, spec: dict[str, Any]) -> Any:
    if code == "MISSING_DEPENDENCY":
        return None
    match = _SUGGESTED_RE.search(message)
    if match:
        return match.group("value")
    if code == "BELOW_MINIMUM" and spec.get("minimum") is not None:
        return spec["minimum"]
    if code == "ABOVE_MAXIMUM" and spec.get("maximum") is not None:
        return spec["maximum"]
    if spec.get("default") is not None:
        return spec["default"]
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    # The validator's generic example is a last resort, for required values only.
    match = _EXAMPLE_RE.search(message) if spec.get("required") else None
    if match:
        try:
            return json.loads(match.group("value").replace("'", '"'))
        except ValueError:
            return None
    return None
