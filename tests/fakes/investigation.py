"""In-process doubles and builders for investigation tests.

`ScriptedLLM` plays a scripted conversation (an in-process LLMProvider);
`RecordingCatalog`, `FailingCatalog` and `SlowCatalog` wrap the bundled
catalog; `run` investigates one incident and collects the events. The
HTTP-level model double is `tests/fakes/scripted_llm.py`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.catalog.loader import load_bundled_catalog
from hapi_grpc.domain.catalog import (
    Condition,
    SearchQuery,
    SearchResult,
    Workflow,
    WorkflowCatalog,
    WorkflowSchema,
)
from hapi_grpc.domain.errors import CatalogUnavailableError
from hapi_grpc.domain.incident import (
    BusinessContext,
    EnrichmentResults,
    ErrorDetails,
    Incident,
    SignalInfo,
)
from hapi_grpc.domain.investigation.engine import EngineSettings, InvestigationEngine
from hapi_grpc.domain.investigation.observer import InvestigationObserver
from hapi_grpc.domain.llm import (
    ChatMessage,
    LLMResponse,
    TokenUsage,
    ToolCall,
    ToolChoice,
    ToolDefinition,
)
from hapi_grpc.domain.result import AnalysisEvent

OOM_ID = "oomkill-increase-memory-v1"
GOOD_PARAMS = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}
CUSTOM_LABELS = {"constraint": ("cost-constrained",), "team": ("name=payments",)}
DETECTED_LABELS = {"gitOpsManaged": False, "gitOpsTool": "argocd-secret-marker"}

# --- builders -----------------------------------------------------------------------


def make_incident(
    remediation_id: str = "rr-oom-1",
    *,
    custom_labels: dict[str, tuple[str, ...]] | None = None,
    detected_labels: dict[str, Any] | None = None,
) -> Incident:
    return Incident(
        remediation_id=remediation_id,
        incident_id="fp-1",
        signal=SignalInfo(
            signal_type="OOMKilled",
            severity="critical",
            component="deployment",
            alert_name="KubePodOOMKilled",
            namespace="payments",
            resource_kind="Deployment",
            resource_name="payment-api",
        ),
        error_details=ErrorDetails(error_message="Container OOMKilled; memory limit 512Mi"),
        business=BusinessContext(environment="production", priority="P0"),
        enrichment=EnrichmentResults(
            custom_labels=CUSTOM_LABELS if custom_labels is None else custom_labels,
            detected_labels=DETECTED_LABELS if detected_labels is None else detected_labels,
        ),
    )


_call_ids = iter(range(1, 1_000_000))


def tool(name: str, args: dict[str, Any] | str) -> LLMResponse:
    raw = args if isinstance(args, str) else json.dumps(args)
    return LLMResponse(
        tool_calls=(ToolCall(id=f"call-{next(_call_ids)}", name=name, arguments=raw),),
        usage=TokenUsage(100, 10),
        model="scripted-model-1",
    )


def search(query: str = "OOMKilled critical", **extra: Any) -> LLMResponse:
    return tool("search_workflow_catalog", {"query": query, **extra})


def validate(parameters: dict[str, Any], workflow_id: str = OOM_ID) -> LLMResponse:
    return tool(
        "validate_workflow_parameters", {"workflow_id": workflow_id, "parameters": parameters}
    )


def answer_json(
    *,
    workflow_id: str | None = OOM_ID,
    parameters: dict[str, Any] | None = None,
    confidence: float = 0.9,
    version: str | None = "1.0.0",
    **overrides: Any,
) -> str:
    selected: dict[str, Any] | None = None
    if workflow_id is not None:
        selected = {
            "workflow_id": workflow_id,
            "confidence": confidence,
            "rationale": "memory grows steadily to the limit",
            "estimated_risk": "low",
            "parameters": GOOD_PARAMS if parameters is None else parameters,
        }
        if version is not None:
            selected["version"] = version
    body = {
        "analysis_summary": "payment-api is OOMKilled repeatedly",
        "root_cause_assessment": "the memory limit is too low for the steady-state working set",
        "rca_severity": "critical",
        "selected_workflow": selected,
        "alternative_workflows": [],
        "warnings": [],
        "context_used": {
            "cluster_state": "healthy",
            "resource_availability": "enough memory",
            "blast_radius": "one deployment",
        },
        **overrides,
    }
    return json.dumps(body)


def say(text: str) -> LLMResponse:
    return LLMResponse(content=text, usage=TokenUsage(100, 10), model="scripted-model-1")


# --- doubles ------------------------------------------------------------------------

Step = LLMResponse | BaseException | Callable[[list[ChatMessage]], Any]


class ScriptedLLM:
    """An in-process LLMProvider that plays steps and records what it was sent.

    A step is a response, an exception to raise, or a callable taking the
    messages and returning a response (possibly a coroutine). When the script
    runs out, the last step repeats (a looping model).
    """

    name = "openai"
    uses_language_model = True

    def __init__(self, steps: Sequence[Step], model: str = "scripted-model") -> None:
        self.steps = list(steps)
        self.model = model
        self.calls: list[list[ChatMessage]] = []
        self.tools: list[list[ToolDefinition]] = []
        self.tool_choices: list[ToolChoice] = []
        self.cancelled = 0
        self.closed = False

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolDefinition],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> LLMResponse:
        index = min(len(self.calls), len(self.steps) - 1)
        self.calls.append(list(messages))
        self.tools.append(list(tools))
        self.tool_choices.append(tool_choice)
        step = self.steps[index]
        try:
            if isinstance(step, BaseException):
                raise step
            if callable(step):
                step = step(messages)
                if asyncio.iscoroutine(step):
                    step = await step
            return step
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def close(self) -> None:
        self.closed = True

    def tool_results(self, call: int = -1) -> list[dict[str, Any]]:
        """Tool results (parsed) that the model had been given at call `call`."""
        return [json.loads(m.content) for m in self.calls[call] if m.role == "tool"]


@functools.cache
def bundled_catalog(*, declarations: bool = True) -> EmbeddedCatalog:
    """The bundled catalog (it is immutable, so sharing it is safe).

    `declarations=False` replaces each workflow's premise with one that always
    holds (no action type, so no premise pack; one precondition `true`): for tests
    of the conversation's mechanics, where no cluster is read and the premises are
    not what is under test.
    """
    catalog = EmbeddedCatalog.from_file(None)
    if declarations:
        return catalog
    return EmbeddedCatalog(
        [
            w.model_copy(
                update={
                    "preconditions": () if w.read_only else (ALWAYS,),
                    "invariants": (),
                    "action_type": "",
                }
            )
            for w in load_bundled_catalog()
        ]
    )


# A premise that always holds: what mechanics tests declare instead of a real one.
ALWAYS = Condition(name="mechanics_test", expression="true", message="not under test")


def wire_catalog() -> EmbeddedCatalog:
    """The bundled catalog with every workflow read-only and undeclared: for tests of how a
    selection crosses the wire, run without a cluster (where the built-in analyst selects
    nothing that changes the cluster). Ids and parameters are unchanged."""
    return EmbeddedCatalog(
        [
            w.model_copy(update={"preconditions": (), "invariants": (), "read_only": True})
            for w in load_bundled_catalog()
        ]
    )


class RecordingCatalog:
    """Wraps a catalog and records every query and schema lookup."""

    def __init__(self, inner: WorkflowCatalog | None = None) -> None:
        # Mechanics tests: no cluster is read, so the premises are left out.
        self.inner = inner or bundled_catalog(declarations=False)
        self.queries: list[SearchQuery] = []
        self.schemas: list[str] = []

    async def search(self, query: SearchQuery) -> SearchResult:
        self.queries.append(query)
        return await self.inner.search(query)

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        self.schemas.append(workflow_id)
        return await self.inner.get_schema(workflow_id)

    async def get_workflow(self, workflow_id: str) -> Workflow:
        return await self.inner.get_workflow(workflow_id)

    async def close(self) -> None:
        await self.inner.close()


class FailingCatalog(RecordingCatalog):
    """Data Storage down: every call raises CatalogUnavailableError (optionally only schemas)."""

    def __init__(self, *, schemas_only: bool = False) -> None:
        super().__init__()
        self.schemas_only = schemas_only

    async def search(self, query: SearchQuery) -> SearchResult:
        if self.schemas_only:
            return await super().search(query)
        self.queries.append(query)
        raise CatalogUnavailableError("circuit breaker open")

    async def get_schema(self, workflow_id: str) -> WorkflowSchema:
        self.schemas.append(workflow_id)
        raise CatalogUnavailableError("circuit breaker open")


class SlowCatalog(RecordingCatalog):
    """Searches take `delay` seconds; records cancellations."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.cancelled = 0

    async def search(self, query: SearchQuery) -> SearchResult:
        self.queries.append(query)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return await self.inner.search(query)


async def run(
    steps: Sequence[Step],
    *,
    catalog: WorkflowCatalog | None = None,
    settings: EngineSettings | None = None,
    incident: Incident | None = None,
    observer: InvestigationObserver | None = None,
) -> tuple[Any, ScriptedLLM, list[AnalysisEvent]]:
    llm = ScriptedLLM(steps)
    events: list[AnalysisEvent] = []

    async def sink(event: AnalysisEvent) -> None:
        events.append(event)

    engine = InvestigationEngine(
        catalog or RecordingCatalog(),
        llm,
        settings or EngineSettings(tool_timeout=2.0),
        **({"observer": observer} if observer is not None else {}),
    )
    result = await engine.investigate(incident or make_incident(), on_event=sink)
    return result, llm, events


def search_hit_ids(result: Any) -> list[str]:
    """Workflow ids of the first search result, best first."""
    return [w["workflow_id"] for w in json.loads(result.tool_calls[0].result)["workflows"]]


def alternative_ids(result: Any) -> list[str]:
    return [a.workflow_id for a in result.alternative_workflows]


def all_text_sent(llm: ScriptedLLM) -> str:
    """Everything the model could read: messages of every call and the tool definitions."""
    parts = []
    for messages, tools in zip(llm.calls, llm.tools, strict=True):
        parts.extend(f"{m.content}|{m.tool_call_id}|{m.name}" for m in messages)
        parts.extend(json.dumps(dataclasses.asdict(t)) for t in tools)
    return "\n".join(parts)
