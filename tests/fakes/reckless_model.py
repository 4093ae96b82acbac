"""A reckless model: reads the reported resource, then selects the first search result.

It stands for the worst plausible language model: it calls the tools a model
would (`kubernetes_get` and `kubernetes_owner_chain` on the incident's
resource, when offered, then `search_workflow_catalog`), always selects the
first hit, fills its parameters with schema-valid values (the incident's
names, the owner chain's workload, defaults, the first allowed value, the
minimum) and, when its answer is sent back, answers the same again. Nothing it
does is judicious, so whatever keeps it from automating an unsafe remediation
is the service's own checks.

`python -m tests.fakes.reckless_model` serves it over the OpenAI protocol on
a free loopback port and prints its base URL (for `hapi-grpc eval` with
`HAPI_LLM_PROVIDER=openai` and `HAPI_LLM_BASE_URL` set to it).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import re2

from tests.fakes.scripted_llm import ScriptedLLMServer, Step, StepLike
from tests.helpers.prompt_facts import PromptFacts as Facts

__all__ = ["reckless_script", "reckless_step"]

SEARCH = "search_workflow_catalog"
GET = "kubernetes_get"
OWNERS = "kubernetes_owner_chain"
# Runs of the same incident share one conversation (keyed by its first messages),
# so one long-running server answers many eval runs of a case without running out.
_STEPS = 10_000
# Strings tried, in order, for a string parameter with a pattern.
_FALLBACKS = ("1Gi", "512Mi", "default", "app", "a")


def _messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request.get("messages", []) if isinstance(m, dict)]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _called(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tool name -> the JSON result of its last call."""
    names = {
        call.get("id"): (call.get("function") or {}).get("name")
        for m in messages
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or []
    }
    out: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m.get("role") == "tool":
            try:
                value = json.loads(_text(m))
            except ValueError:
                value = {}
            out[str(names.get(m.get("tool_call_id")))] = value if isinstance(value, dict) else {}
    return out


def _offered(request: dict[str, Any]) -> set[str]:
    return {(t.get("function") or {}).get("name", "") for t in request.get("tools") or []}


def _value(spec: dict[str, Any], facts: Facts, workload: str) -> Any:
    name = str(spec.get("name", ""))
    kind = spec.get("type")
    if name.endswith("NAMESPACE") and facts.namespace:
        return facts.namespace
    if name in ("DEPLOYMENT_NAME", "TARGET_RESOURCE_NAME") and workload:
        return workload
    if name.endswith("_NAME") and facts.name and name != "CONTAINER_NAME":
        return facts.name
    if spec.get("default") is not None:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
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


def _answer(hit: dict[str, Any], facts: Facts, workload: str) -> Step:
    specs = [s for s in hit.get("parameters") or [] if isinstance(s, dict)]
    parameters = {}
    for spec in specs:
        if spec.get("required"):
            value = _value(spec, facts, workload)
            if value is not None:
                parameters[str(spec["name"])] = value
    return Step.text(
        json.dumps(
            {
                "analysis_summary": f"{facts.signal_type} on {facts.kind}/{facts.name}",
                "root_cause_assessment": "The first workflow the catalog returned fits.",
                "rca_severity": facts.severity or "high",
                "selected_workflow": {
                    "workflow_id": hit.get("workflow_id"),
                    "version": hit.get("version", ""),
                    "confidence": 0.95,
                    "rationale": "first search result",
                    "estimated_risk": "low",
                    "parameters": parameters,
                },
                "alternative_workflows": [],
                "warnings": [],
            }
        )
    )


def reckless_step(request: dict[str, Any]) -> Step:
    """The next reply of the reckless model to `request` (see module docstring)."""
    messages = _messages(request)
    users = [m for m in messages if m.get("role") == "user"]
    facts = Facts.read(_text(users[0]) if users else "")
    offered = _offered(request)
    done = _called(messages)
    resource: dict[str, Any] = {"kind": facts.kind, "name": facts.name}
    if facts.namespace and facts.kind.lower() != "node":
        resource["namespace"] = facts.namespace
    if GET in offered and facts.name and GET not in done:
        return Step.tool_calls([(GET, resource)])
    if OWNERS in offered and facts.name and OWNERS not in done:
        return Step.tool_calls([(OWNERS, resource)])
    found = done.get(SEARCH)
    if found is None:
        query = " ".join(p for p in (facts.signal_type, facts.severity) if p) or "incident"
        return Step.tool_calls([(SEARCH, {"query": query})])
    hits = [h for h in found.get("workflows") or [] if isinstance(h, dict)]
    if not hits:
        return Step.text(
            json.dumps(
                {
                    "analysis_summary": "nothing matched",
                    "root_cause_assessment": "no workflow",
                    "rca_severity": "medium",
                    "selected_workflow": None,
                    "alternative_workflows": [],
                    "warnings": [],
                }
            )
        )
    chain = (done.get(OWNERS) or {}).get("cluster_data") or {}
    target = str(chain.get("remediation_target", "")).split("/")
    workload = target[3] if len(target) == 4 and target[2] != "Pod" else ""
    return _answer(hits[0], facts, workload)


def reckless_script(_first: dict[str, Any]) -> list[StepLike]:
    """`script_for` of a `ScriptedLLMServer`: every conversation is reckless."""
    return [reckless_step] * _STEPS


async def _serve() -> None:
    async with ScriptedLLMServer("openai", script_for=reckless_script, strict=False) as server:
        print(server.base_url, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_serve())
