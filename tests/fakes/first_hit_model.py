"""A plain model for tests of the wire: it selects the first search hit, validated.

Tests of what crosses the wire (the CLI's output, the Go and grpcurl contracts,
tracing spans, exposure levels, authorization) need a decider that selects a
workflow with typed parameters without a cluster to read. The built-in analyst
no longer does that (it selects nothing that changes the cluster without evidence,
and takes no value from a schema default), so these tests use this model: like any
model it reads the prompt, searches "<signal> <severity>", fills every parameter of
the first hit with a schema-valid value (the incident's names, the schema default,
the first allowed value, the minimum), validates them, and answers with what the
validator accepted. It is a `LLMProvider` in process (`FirstHitModel`) and, for a
server in another process, a step of a `ScriptedLLMServer` (`first_hit_step`;
`python -m tests.fakes.first_hit_model` serves it and prints its base URL).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import re2

from hapi_grpc.domain.llm import ChatMessage, LLMResponse, ToolCall, ToolChoice, ToolDefinition
from tests.fakes.scripted_llm import ScriptedLLMServer, Step, StepLike
from tests.helpers.prompt_facts import PromptFacts

__all__ = ["FirstHitModel", "first_hit_script", "first_hit_step"]

SEARCH = "search_workflow_catalog"
VALIDATE = "validate_workflow_parameters"
_FALLBACKS = ("1Gi", "512Mi", "default", "app", "a")
# The server keys a conversation by its first message: every investigation of one
# incident draws on the same script, so it is long enough for any test session.
_STEPS = 10_000


def _value(spec: dict[str, Any], facts: PromptFacts) -> Any:
    name = str(spec.get("name", ""))
    if name.endswith("NAMESPACE") and facts.namespace:
        return facts.namespace
    if name.endswith("_NAME") and facts.name and name != "CONTAINER_NAME":
        return facts.name
    if spec.get("default") is not None:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
    kind = spec.get("type")
    if kind in ("integer", "float", "number"):
        low = spec.get("minimum")
        return low if low is not None else 1
    if kind == "boolean":
        return False
    pattern = spec.get("pattern")
    for candidate in (facts.name, facts.namespace, *_FALLBACKS):
        if candidate and (not pattern or re2.search(pattern, candidate)):
            return candidate
    return None


def _answer(facts: PromptFacts, hit: dict[str, Any] | None, parameters: dict[str, Any]) -> str:
    selected = None
    if hit is not None:
        selected = {
            "workflow_id": hit.get("workflow_id"),
            "version": hit.get("version", ""),
            "confidence": hit.get("confidence", 0.9),
            "rationale": "the first catalog match, validated",
            "estimated_risk": "low",
            "parameters": parameters,
        }
    answer: dict[str, Any] = {}
    if facts.kind and facts.name:  # the reported resource, as the prompt names it
        group = "apps" if facts.kind in ("Deployment", "StatefulSet", "DaemonSet") else ""
        answer["target_resource"] = {
            "namespace": facts.namespace,
            "kind": facts.kind,
            "name": facts.name,
            "api_group": group,
        }
    return json.dumps(
        {
            **answer,
            "analysis_summary": f"{facts.signal_type} on {facts.kind}/{facts.name}",
            "root_cause_assessment": f"{facts.signal_type} reported on {facts.name}.",
            "rca_severity": facts.severity or "medium",
            "selected_workflow": selected,
            "alternative_workflows": [],
            "warnings": [],
        }
    )


def decide(prompt: str, done: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> Any:
    """The next step: a (tool, arguments) call or the answer's text. `done` holds the
    calls made so far as (tool, arguments, result)."""
    facts = PromptFacts.read(prompt)
    searched = [r for name, _, r in done if name == SEARCH]
    if not searched:
        query = " ".join(p for p in (facts.signal_type, facts.severity) if p) or "incident"
        return SEARCH, {"query": query}
    hits = [h for h in searched[0].get("workflows") or [] if isinstance(h, dict)]
    if not hits:
        return _answer(facts, None, {})
    hit = hits[0]
    checks = [(a, r) for name, a, r in done if name == VALIDATE]
    if not checks:
        specs = [s for s in hit.get("parameters") or [] if isinstance(s, dict)]
        values = {str(s["name"]): _value(s, facts) for s in specs}
        parameters = {k: v for k, v in values.items() if v is not None}
        return VALIDATE, {"workflow_id": hit.get("workflow_id"), "parameters": parameters}
    arguments, verdict = checks[-1]
    if verdict.get("status") == "valid":
        return _answer(facts, hit, dict(verdict.get("parameters") or arguments["parameters"]))
    return _answer(facts, None, {})


def _loads(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class FirstHitModel:
    """The model as an in-process `LLMProvider`."""

    name = "first-hit"
    model = "first-hit"
    uses_language_model = True

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolDefinition],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> LLMResponse:
        prompt = next((m.content for m in messages if m.role == "user"), "")
        calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
        done = [
            (calls[m.tool_call_id].name, _loads(calls[m.tool_call_id].arguments), _loads(m.content))
            for m in messages
            if m.role == "tool" and m.tool_call_id in calls
        ]
        step = decide(prompt, done)
        if isinstance(step, str) or tool_choice == "none":
            text = step if isinstance(step, str) else _answer(PromptFacts.read(prompt), None, {})
            return LLMResponse(content=text, model=self.model, finish_reason="stop")
        tool, arguments = step
        call = ToolCall(id=f"call-{len(done)}", name=tool, arguments=json.dumps(arguments))
        return LLMResponse(tool_calls=(call,), model=self.model, finish_reason="tool_calls")

    async def close(self) -> None:
        """Nothing to release."""


def first_hit_step(request: dict[str, Any]) -> Step:
    """The model's next reply to an OpenAI chat request."""
    messages = [m for m in request.get("messages", []) if isinstance(m, dict)]
    prompt = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    calls = {
        c.get("id"): c.get("function") or {}
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    }
    done = [
        (
            str(calls[m.get("tool_call_id")].get("name")),
            _loads(calls[m.get("tool_call_id")].get("arguments")),
            _loads(m.get("content")),
        )
        for m in messages
        if m.get("role") == "tool" and m.get("tool_call_id") in calls
    ]
    step = decide(prompt, done)
    return Step.text(step) if isinstance(step, str) else Step.tool_calls([step])


def first_hit_script(_first: dict[str, Any]) -> list[StepLike]:
    """`script_for` of a `ScriptedLLMServer`: every conversation goes the same way."""
    return [first_hit_step] * _STEPS


async def _serve() -> None:
    async with ScriptedLLMServer("openai", script_for=first_hit_script, strict=False) as server:
        print(server.base_url, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_serve())
