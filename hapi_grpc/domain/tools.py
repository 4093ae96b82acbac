"""The tools offered to the model, and the handler that runs its tool calls.

One source of truth: the pydantic argument models below produce the JSON
Schema the model is shown (`TOOL_DEFINITIONS`) and validate the arguments it
sends. They mirror `hapi.v1.SearchWorkflowCatalogArgs` and
`hapi.v1.ValidateWorkflowParametersArgs` (a test keeps them in step).

`ToolSession` holds everything that belongs to one investigation: the search
context appended to every catalog search (DD-HAPI-001: the model never sees
custom or detected labels), the workflows the catalog returned, the call
count, the results of earlier calls (an identical call is answered from
them, never re-executed) and the shared validation ledger. Nothing is shared
between investigations.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hapi_grpc.domain.catalog import (
    MIN_SCORE_DEFAULT,
    TOP_K_DEFAULT,
    TOP_K_MAX,
    ParameterSpec,
    SearchFilters,
    SearchHit,
    SearchQuery,
    SearchResult,
    WorkflowCatalog,
)
from hapi_grpc.domain.deadline import Budget
from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    CatalogUnavailableError,
    InvalidRequestError,
    WorkflowNotFoundError,
)
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.llm import ToolCall, ToolDefinition
from hapi_grpc.domain.parameters import ValidationOutcome
from hapi_grpc.domain.result import (
    ToolCallRecord,
    ToolCallStatus,
    ValidationAttempt,
    ValidationSource,
)
from hapi_grpc.domain.workflow_validation import redact_parameters, validate_workflow_parameters
from hapi_grpc.observability import metrics
from hapi_grpc.observability.tracing import span

__all__ = [
    "SEARCH_TOOL",
    "TOOL_DEFINITIONS",
    "VALIDATE_TOOL",
    "SearchContext",
    "SearchWorkflowCatalogArgs",
    "ToolSession",
    "ValidateWorkflowParametersArgs",
    "ValidationLedger",
    "canonical_json",
    "compact_json",
    "tool_json_schema",
    "with_notice",
]

logger = logging.getLogger("hapi_grpc.domain.engine.tools")

SEARCH_TOOL = "search_workflow_catalog"
VALIDATE_TOOL = "validate_workflow_parameters"
TOOL_NAMES = frozenset({SEARCH_TOOL, VALIDATE_TOOL})
SEVERITIES = ("critical", "high", "medium", "low")

DEGRADED_FALLBACK = "continue_without_context"

# Bounds on what one tool call may cost or return.
MAX_ARGUMENT_BYTES = 64 * 1024
_DESCRIPTION_CHARS = 160
_PARAM_DESCRIPTION_CHARS = 80
_ERRORS_SHOWN = 10


# --- argument models: the single source of truth ------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchWorkflowCatalogArgs(_Args):
    """Arguments of `search_workflow_catalog` (proto `SearchWorkflowCatalogArgs`)."""

    query: str = Field(
        min_length=1,
        max_length=512,
        description="'<signal_type> <severity> [keywords]', e.g. 'OOMKilled critical memory limit'",
    )
    similarity_threshold: float = Field(
        default=MIN_SCORE_DEFAULT, ge=0.0, le=1.0, description="Minimum match score (0-1)"
    )
    limit: int = Field(
        default=TOP_K_DEFAULT, ge=1, le=TOP_K_MAX, description="Maximum number of workflows"
    )
    signal_type: str | None = Field(
        default=None, max_length=128, description="Signal type your RCA identified"
    )
    severity: Literal["critical", "high", "medium", "low"] | None = Field(
        default=None, description="Severity you assessed"
    )
    component: str | None = Field(
        default=None,
        max_length=128,
        description="Resource type to remediate, e.g. deployment, node",
    )

    @field_validator("severity", mode="before")
    @classmethod
    def _fold_severity(cls, value: Any) -> Any:
        # Models often capitalise; "" means "not set" as in the proto.
        if isinstance(value, str):
            value = value.strip().lower()
            return value or None
        return value

    @field_validator("signal_type", "component", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value


class ValidateWorkflowParametersArgs(_Args):
    """Arguments of `validate_workflow_parameters` (proto `ValidateWorkflowParametersArgs`)."""

    workflow_id: str = Field(
        min_length=1, max_length=128, description="Workflow id exactly as returned by the search"
    )
    parameters: dict[str, Any] = Field(
        description="Parameter name to value, with the schema's types"
    )

    @field_validator("parameters", mode="before")
    @classmethod
    def _json_text_is_object(cls, value: Any) -> Any:
        # Some models send the object as a JSON string; accept it if it is one.
        if isinstance(value, str):
            try:
                parsed = json.loads(value)
            except ValueError:
                return value
            if isinstance(parsed, dict):
                return parsed
        return value


def tool_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema as a tool definition: no titles, no null unions.

    The class docstring is dropped: the tool's own description is what the
    model reads.
    """
    schema = _clean_schema(model.model_json_schema())
    schema.pop("description", None)
    return schema


def _clean_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    node.pop("title", None)
    options = node.get("anyOf")
    if isinstance(options, list):
        # `X | None` becomes X: an omitted argument already means "not set",
        # and some providers reject union types in tool schemas.
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options):
            node.pop("anyOf")
            node = {**kept[0], **node}
            if node.get("default", 0) is None:
                node.pop("default")
    return {key: _clean_schema(value) for key, value in node.items()}


TOOL_DEFINITIONS: tuple[ToolDefinition, ...] = (
    ToolDefinition(
        name=SEARCH_TOOL,
        description=(
            "Search the remediation workflow catalog. Returns matching workflows, best first, "
            "with id, version, match confidence and parameter schema."
        ),
        parameters=tool_json_schema(SearchWorkflowCatalogArgs),
    ),
    ToolDefinition(
        name=VALIDATE_TOOL,
        description=(
            "Validate parameters for a workflow returned by search_workflow_catalog against its "
            "parameter schema. Returns valid/invalid with actionable errors. Call it before "
            "your final answer."
        ),
        parameters=tool_json_schema(ValidateWorkflowParametersArgs),
    ),
)

_ARG_MODELS: dict[str, type[_Args]] = {
    SEARCH_TOOL: SearchWorkflowCatalogArgs,
    VALIDATE_TOOL: ValidateWorkflowParametersArgs,
}


# --- JSON helpers -----------------------------------------------------------


def compact_json(value: Any) -> str:
    """JSON without insignificant whitespace (tool results are paid for per token)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def canonical_json(value: Any) -> str:
    """A stable text for equality checks: sorted keys, compact."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def with_notice(result: str, notice: str) -> str:
    """`result` (a JSON object text) with a `notice` for the model added."""
    try:
        payload = json.loads(result)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        payload = {"result": result}
    payload["notice"] = notice
    return compact_json(payload)


def _truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- search context (DD-HAPI-001) ------------------------------------------------


@dataclass(frozen=True)
class SearchContext:
    """What the engine appends to every catalog search; never shown to the model."""

    remediation_id: str = ""
    environment: str = ""
    priority: str = ""
    custom_labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    detected_labels: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_incident(cls, incident: Incident) -> SearchContext:
        return cls(
            remediation_id=incident.remediation_id,
            environment=incident.business.environment,
            priority=incident.business.priority,
            custom_labels={k: tuple(v) for k, v in incident.enrichment.custom_labels.items()},
            detected_labels=dict(incident.enrichment.detected_labels),
        )

    def query(self, args: SearchWorkflowCatalogArgs, top_k_max: int) -> SearchQuery:
        """The catalog query for the model's arguments plus this context."""
        return SearchQuery(
            query=args.query,
            filters=SearchFilters(
                signal_type=args.signal_type,
                severity=args.severity,
                component=args.component,
                environment=self.environment or None,
                priority=self.priority or None,
                custom_labels=dict(self.custom_labels),
                detected_labels=dict(self.detected_labels),
            ),
            top_k=max(1, min(args.limit, top_k_max)),
            min_score=args.similarity_threshold,
            remediation_id=self.remediation_id,
        )


# --- validation ledger ----------------------------------------------------------


class ValidationLedger:
    """The validation attempts of one investigation and their shared budget.

    Tool validations and final-answer checks draw on the same budget. A final
    answer whose parameters already passed a tool validation is confirmed
    without spending another attempt.
    """

    def __init__(self, max_attempts: int) -> None:
        self.max_attempts = max_attempts
        self.attempts: list[ValidationAttempt] = []
        self.used = 0
        self._valid: dict[tuple[str, str], ValidationOutcome] = {}

    @property
    def remaining(self) -> int:
        return max(0, self.max_attempts - self.used)

    @property
    def exhausted(self) -> bool:
        return self.used >= self.max_attempts

    def record(
        self,
        workflow_id: str,
        proposed: Mapping[str, Any] | None,
        outcome: ValidationOutcome,
        source: ValidationSource,
    ) -> ValidationAttempt:
        """Spend one attempt on a parameter validation and record it."""
        self.used += 1
        attempt = ValidationAttempt(
            attempt=len(self.attempts) + 1,
            workflow_id=workflow_id,
            parameters=redact_parameters(proposed),
            errors=outcome.errors,
            valid=outcome.valid,
            source=source,
        )
        self.attempts.append(attempt)
        if outcome.valid:
            self._valid[(workflow_id, canonical_json(dict(proposed or {})))] = outcome
            self._valid[(workflow_id, canonical_json(outcome.sanitized))] = outcome
        metrics.VALIDATION_ATTEMPTS.labels(
            source=source.value.lower(), result="valid" if outcome.valid else "invalid"
        ).inc()
        return attempt

    def charge(self) -> None:
        """Spend one attempt on a final answer rejected before any parameter check."""
        self.used += 1

    def confirmed(
        self, workflow_id: str, parameters: Mapping[str, Any]
    ) -> ValidationOutcome | None:
        """The earlier passing verdict for exactly these parameters, if any."""
        return self._valid.get((workflow_id, canonical_json(dict(parameters))))


# --- the handler ---------------------------------------------------------------


@dataclass
class _Call:
    status: ToolCallStatus
    result: dict[str, Any]
    attempt: ValidationAttempt | None = None


class ToolSession:
    """Runs one investigation's tool calls (see module docstring)."""

    def __init__(
        self,
        catalog: WorkflowCatalog,
        context: SearchContext,
        ledger: ValidationLedger,
        budget: Budget,
        *,
        max_tool_calls: int,
        tool_timeout: float,
        top_k_max: int = TOP_K_MAX,
    ) -> None:
        self._catalog = catalog
        self._context = context
        self._ledger = ledger
        self._budget = budget
        self._max_calls = max_tool_calls
        self._tool_timeout = tool_timeout
        self._top_k_max = top_k_max
        self._answers: dict[tuple[str, str], str] = {}
        self.calls_counted = 0
        self.records: list[ToolCallRecord] = []
        # Workflows the catalog returned in this investigation, by id.
        self.seen: dict[str, SearchHit] = {}
        self.searches_ok = 0
        self.catalog_failures = 0

    @property
    def cap_reached(self) -> bool:
        return self.calls_counted >= self._max_calls

    @property
    def searched(self) -> bool:
        return any(r.name == SEARCH_TOOL for r in self.records)

    async def run(self, call: ToolCall) -> tuple[ToolCallRecord, ValidationAttempt | None]:
        """Answer one tool call; never raises for anything the model did."""
        started = time.perf_counter()
        raw = call.arguments or ""
        parsed, parse_error = _parse_arguments(raw)
        key = (call.name, canonical_json(parsed) if parsed is not None else raw)

        previous = self._answers.get(key)
        if previous is not None:
            outcome = _Call(ToolCallStatus.REPEATED, {})
            text = with_notice(
                previous, "Identical to an earlier call: same result. Do not repeat calls."
            )
        else:
            tool = call.name if call.name in TOOL_NAMES else "unknown"
            with span(f"tool.{tool}"):
                outcome = await self._dispatch(call.name, parsed, parse_error)
            text = compact_json(outcome.result)
            if outcome.status in _DETERMINISTIC:
                self._answers[key] = text
        duration = time.perf_counter() - started

        redacted = redact_parameters(parsed) if parsed is not None else None
        if redacted is not None and redacted != parsed:
            raw = compact_json(redacted)  # the raw text would carry the secret values
        record = ToolCallRecord(
            name=call.name,
            raw_arguments=raw,
            arguments=redacted,
            result=text,
            status=outcome.status,
            duration_seconds=duration,
        )
        self.records.append(record)
        self._observe(record)
        return record, outcome.attempt

    async def _dispatch(self, name: str, parsed: dict[str, Any] | None, parse_error: str) -> _Call:
        if self.cap_reached:
            return _Call(
                ToolCallStatus.LIMIT_EXCEEDED,
                {
                    "error": f"tool-call limit reached ({self._max_calls} per investigation)."
                    " Do not call tools again: reply now with the final JSON answer."
                },
            )
        self.calls_counted += 1
        if name not in _ARG_MODELS:
            return _Call(
                ToolCallStatus.UNKNOWN_TOOL,
                {
                    "error": f"unknown tool {_truncate(name, 64)!r}; available tools:"
                    f" {SEARCH_TOOL}, {VALIDATE_TOOL}"
                },
            )
        if parsed is None:
            return _Call(
                ToolCallStatus.INVALID_ARGUMENTS,
                {
                    "error": f"arguments are not a JSON object ({parse_error}).",
                    "expected": _HINTS[name],
                },
            )
        try:
            args = _ARG_MODELS[name].model_validate(parsed)
        except ValidationError as exc:
            return _Call(
                ToolCallStatus.INVALID_ARGUMENTS,
                {
                    "error": "invalid arguments: " + _describe(exc),
                    "expected": _HINTS[name],
                },
            )
        if isinstance(args, SearchWorkflowCatalogArgs):
            return await self._guarded(self._search(args))
        assert isinstance(args, ValidateWorkflowParametersArgs)
        return await self._validate(args)

    # --- search -------------------------------------------------------------

    async def _search(self, args: SearchWorkflowCatalogArgs) -> _Call:
        query = self._context.query(args, self._top_k_max)
        found: SearchResult = await self._catalog.search(query)
        hits = list(found.workflows)
        missing = [i for i, hit in enumerate(hits) if hit.parameters is None]
        if missing:
            # Data Storage may omit schemas from search results; the model
            # needs them to fill parameters, so fetch them (cached upstream).
            schemas = await asyncio.gather(
                *(self._catalog.get_schema(hits[i].workflow_id) for i in missing),
                return_exceptions=True,
            )
            for i, schema in zip(missing, schemas, strict=True):
                if isinstance(schema, asyncio.CancelledError):
                    raise schema
                if not isinstance(schema, BaseException):
                    hits[i] = hits[i].model_copy(update={"parameters": schema.parameters})
        for hit in hits:
            self.seen.setdefault(hit.workflow_id, hit)
        self.searches_ok += 1
        result: dict[str, Any] = {
            "workflows": [_hit_summary(hit) for hit in hits],
            "total_results": len(hits),
        }
        if not hits:
            result["hint"] = (
                "No workflow matched. Try other keywords or a lower similarity_threshold;"
                " if nothing fits, answer with selected_workflow null."
            )
        return _Call(ToolCallStatus.SUCCESS, result)

    # --- validation ------------------------------------------------------------

    async def _validate(self, args: ValidateWorkflowParametersArgs) -> _Call:
        hit = self.seen.get(args.workflow_id)
        if hit is None:
            known = ", ".join(list(self.seen)[:10]) or "none yet"
            return _Call(
                ToolCallStatus.INVALID_ARGUMENTS,
                {
                    "error": f"workflow_id {_truncate(args.workflow_id, 64)!r} was not returned"
                    f" by {SEARCH_TOOL} in this investigation (returned: {known})."
                    " Use an id from the search results.",
                },
            )
        if self._ledger.exhausted:
            return _Call(
                ToolCallStatus.LIMIT_EXCEEDED,
                {
                    "error": f"all {self._ledger.max_attempts} validation attempts are used."
                    " Reply now with the final JSON answer: selected_workflow null, the"
                    " workflow in alternative_workflows; a human will review.",
                },
            )
        return await self._guarded(self._check(args))

    async def _check(self, args: ValidateWorkflowParametersArgs) -> _Call:
        schema, outcome = await validate_workflow_parameters(
            self._catalog, args.workflow_id, args.parameters
        )
        attempt = self._ledger.record(
            args.workflow_id, args.parameters, outcome, ValidationSource.TOOL
        )
        result: dict[str, Any] = {
            "workflow_id": args.workflow_id,
            "version": schema.version or self.seen[args.workflow_id].version,
            **outcome.to_llm_dict(),
        }
        left = self._ledger.remaining
        if outcome.valid:
            if outcome.stripped:
                result["parameters"] = outcome.sanitized
            result["next"] = "Use these parameters in your final answer."
        elif left:
            result["attempts_left"] = left
            result["next"] = "Correct the parameters and validate again."
        else:
            result["attempts_left"] = 0
            result["next"] = (
                "No attempts left. Reply now with the final JSON answer: selected_workflow"
                " null, this workflow in alternative_workflows; a human will review."
            )
        return _Call(ToolCallStatus.SUCCESS, result, attempt)

    # --- failure handling --------------------------------------------------------

    async def _guarded(self, work: Any) -> _Call:
        """Await a catalog-backed tool within its timeout; map failures to results."""
        timeout = min(self._tool_timeout, self._budget.remaining())
        if timeout <= 0:
            work.close()
            return _Call(ToolCallStatus.TIMEOUT, dict(_NO_TIME))
        try:
            async with asyncio.timeout(timeout):
                return await work
        except (TimeoutError, BudgetExhaustedError):
            if self._budget.expired:
                return _Call(ToolCallStatus.TIMEOUT, dict(_NO_TIME))
            self.catalog_failures += 1
            return _Call(
                ToolCallStatus.TIMEOUT,
                _degraded(f"the workflow catalog did not answer within {timeout:.3g}s"),
            )
        except WorkflowNotFoundError as exc:
            return _Call(
                ToolCallStatus.ERROR,
                {
                    "error": f"workflow {_truncate(exc.workflow_id, 64)!r} is not in the"
                    " catalog; choose another one from the search results."
                },
            )
        except InvalidRequestError as exc:
            return _Call(ToolCallStatus.INVALID_ARGUMENTS, {"error": exc.message})
        except CatalogUnavailableError as exc:
            self.catalog_failures += 1
            logger.warning("workflow catalog unavailable during a tool call: %s", exc.message)
            return _Call(ToolCallStatus.ERROR, _degraded("the workflow catalog is unavailable"))
        except Exception:
            # A defect in an adapter must not end the investigation: the model
            # is told to go on without the catalog, and the failure is logged.
            self.catalog_failures += 1
            logger.exception("tool call failed unexpectedly")
            return _Call(ToolCallStatus.ERROR, _degraded("the workflow catalog failed"))

    def _observe(self, record: ToolCallRecord) -> None:
        tool = record.name if record.name in _ARG_MODELS else "unknown"
        status = record.status.value.lower()
        metrics.TOOL_CALLS.labels(tool=tool, status=status).inc()
        metrics.TOOL_CALL_DURATION.labels(tool=tool).observe(record.duration_seconds)
        if record.status not in (ToolCallStatus.SUCCESS, ToolCallStatus.REPEATED):
            metrics.TOOL_CALL_ERRORS.labels(tool=tool).inc()
        logger.info(
            "tool call %s status=%s duration=%.4fs result_bytes=%d",
            tool,
            status,
            record.duration_seconds,
            len(record.result.encode()),
            extra={
                "tool": tool,
                "status": status,
                "duration_seconds": record.duration_seconds,
                "result_bytes": len(record.result.encode()),
            },
        )
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("tool call %s arguments=%s", tool, record.raw_arguments[:2000])


_DETERMINISTIC = frozenset(
    {ToolCallStatus.SUCCESS, ToolCallStatus.INVALID_ARGUMENTS, ToolCallStatus.UNKNOWN_TOOL}
)


_NO_TIME = {"error": "no time left for this tool call; reply now with the final JSON answer."}


def _degraded(reason: str) -> dict[str, Any]:
    return {
        "error": f"{reason}. Continue your analysis without workflow context; if you cannot"
        " select a validated workflow, answer with selected_workflow null.",
        "fallback": DEGRADED_FALLBACK,
    }


def _parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """The argument object, or None and why it is not one."""
    if len(raw) > MAX_ARGUMENT_BYTES:
        return None, f"larger than {MAX_ARGUMENT_BYTES} bytes"
    if not raw.strip():
        return {}, ""  # "no arguments": the schema check reports what is missing
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"malformed JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"got a JSON {type(value).__name__}"
    return value, ""


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False)[:_ERRORS_SHOWN]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown argument"
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


def _hint(model: type[_Args]) -> str:
    schema = tool_json_schema(model)
    required = set(schema.get("required", ()))
    parts = []
    for name, prop in schema["properties"].items():
        kind = prop.get("type", "any")
        extra = []
        if "enum" in prop:
            extra.append("|".join(str(v) for v in prop["enum"]))
        if "minimum" in prop or "maximum" in prop:
            extra.append(f"{prop.get('minimum', '')}-{prop.get('maximum', '')}")
        if "default" in prop:
            extra.append(f"default {prop['default']}")
        if name in required:
            extra.append("required")
        parts.append(f"{name} ({kind}{', ' + ', '.join(extra) if extra else ''})")
    return "; ".join(parts)


_HINTS = {name: _hint(model) for name, model in _ARG_MODELS.items()}


def _param_summary(spec: ParameterSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name, "type": spec.type, "required": spec.required}
    if spec.description:
        out["description"] = _truncate(spec.description, _PARAM_DESCRIPTION_CHARS)
    for key in ("enum", "pattern", "minimum", "maximum", "min_length", "max_length", "default"):
        value = getattr(spec, key)
        if value is not None:
            out[key] = list(value) if isinstance(value, tuple) else value
    if spec.depends_on:
        out["depends_on"] = list(spec.depends_on)
    return out


def _hit_summary(hit: SearchHit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workflow_id": hit.workflow_id,
        "version": hit.version,
        "title": _truncate(hit.title, _DESCRIPTION_CHARS),
    }
    if hit.description:
        out["description"] = _truncate(hit.description, _DESCRIPTION_CHARS)
    out["confidence"] = round(hit.confidence, 4)
    risk = hit.estimated_risk
    if risk in ("low", "medium", "high"):
        out["estimated_risk"] = risk
    if hit.parameters is None:
        out["parameters"] = "unknown: call validate_workflow_parameters to learn them"
    else:
        out["parameters"] = [_param_summary(spec) for spec in hit.parameters]
    return out
