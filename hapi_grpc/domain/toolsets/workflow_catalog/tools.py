"""The `workflow_catalog` toolset: search the catalog, validate parameters.

The search appends the investigation's `SearchContext`; validation draws on
the investigation's `ValidationLedger`. What the model reads back is rendered
here: workflow summaries and the parameter verdict.
"""

from __future__ import annotations

import asyncio
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from pydantic import field_validator

from hapi_grpc.domain import bounded_json
from hapi_grpc.domain.catalog import (
    TOP_K_MAX,
    ParameterSpec,
    SearchHit,
)
from hapi_grpc.domain.levels import RiskLevel
from hapi_grpc.domain.llm import ToolDefinition
from hapi_grpc.domain.parameters import ValidationOutcome
from hapi_grpc.domain.premises import Premises
from hapi_grpc.domain.result import ToolCallStatus, ValidationSource
from hapi_grpc.domain.selection_gate import SelectionGate
from hapi_grpc.domain.toolsets import arguments_gen as proto
from hapi_grpc.domain.toolsets.jsontext import MAX_ARGUMENT_BYTES, one_line
from hapi_grpc.domain.toolsets.tool import ToolContext, ToolResult, refused, tool_json_schema
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.domain.toolsets.workflow_catalog.ledger import ValidationLedger
from hapi_grpc.domain.toolsets.workflow_catalog.session import (
    CatalogFailure,
    CatalogSession,
    FailureKind,
)
from hapi_grpc.domain.workflow_validation import validate_workflow_parameters

__all__ = [
    "NAME",
    "PROMPT_NOTE",
    "SEARCH_TOOL",
    "TOOL_DEFINITIONS",
    "VALIDATE_TOOL",
    "SearchWorkflowCatalogArgs",
    "ValidateWorkflowParametersArgs",
    "render_validation",
    "workflow_catalog_toolset",
]

NAME = "workflow_catalog"
PROMPT_NOTE = "the two catalog tools"
SEARCH_TOOL = "search_workflow_catalog"
VALIDATE_TOOL = "validate_workflow_parameters"
DEGRADED_FALLBACK = "continue_without_context"

SEARCH_DESCRIPTION = (
    "Search the remediation workflow catalog. Returns matching workflows, best first, "
    "with id, version, match confidence and parameter schema."
)
VALIDATE_DESCRIPTION = (
    "Validate parameters for a workflow returned by search_workflow_catalog against its "
    "parameter schema. Returns valid/invalid with actionable errors. Call it before "
    "your final answer."
)

_DESCRIPTION_CHARS = 160
_PARAM_DESCRIPTION_CHARS = 80


class SearchWorkflowCatalogArgs(proto.SearchWorkflowCatalogArgs):
    """`hapi.v1.SearchWorkflowCatalogArgs`, with the severity's case folded."""

    @field_validator("severity", mode="before")
    @classmethod
    def _fold_severity(cls, value: Any) -> Any:
        # Models often capitalise ("" is already unset, as in the proto).
        return value.strip().lower() if isinstance(value, str) else value


class ValidateWorkflowParametersArgs(proto.ValidateWorkflowParametersArgs):
    """`hapi.v1.ValidateWorkflowParametersArgs`; parameters sent as JSON text are accepted."""

    @field_validator("parameters", mode="before")
    @classmethod
    def _json_text_is_object(cls, value: Any) -> Any:
        # Some models send the object as a JSON string; accept it if it is one.
        if isinstance(value, str):
            try:
                parsed = bounded_json.loads(value, max_bytes=MAX_ARGUMENT_BYTES)
            except bounded_json.JsonBoundsError as exc:
                raise ValueError(str(exc)) from None
            except ValueError:
                return value
            if isinstance(parsed, dict):
                return parsed
        return value


TOOL_DEFINITIONS: tuple[ToolDefinition, ...] = (
    ToolDefinition(SEARCH_TOOL, SEARCH_DESCRIPTION, tool_json_schema(SearchWorkflowCatalogArgs)),
    ToolDefinition(
        VALIDATE_TOOL, VALIDATE_DESCRIPTION, tool_json_schema(ValidateWorkflowParametersArgs)
    ),
)
"""What the model is shown of this toolset, in the order offered."""


@dataclass(frozen=True, slots=True)
class SearchWorkflowCatalog:
    session: CatalogSession
    top_k_max: int = TOP_K_MAX
    gate: SelectionGate | None = None
    name: str = SEARCH_TOOL
    description: str = SEARCH_DESCRIPTION
    arguments: type[SearchWorkflowCatalogArgs] = SearchWorkflowCatalogArgs

    async def run(self, args: SearchWorkflowCatalogArgs, ctx: ToolContext) -> ToolResult:
        try:
            hits = await self.session.call(self._search(args), ctx.timeout)
        except CatalogFailure as failure:
            return failure_result(failure)
        self.session.remember(hits)
        # One CEL activation for all hits: the record is converted once, not per hit.
        with self.gate.reusing() if self.gate is not None else nullcontext():
            if self.gate is not None:
                self.gate.prepare([(hit.workflow_id, hit) for hit in hits])
            summaries = [_hit_summary(hit, self.gate) for hit in hits]
        payload: dict[str, Any] = {"workflows": summaries, "total_results": len(hits)}
        if not hits:
            payload["hint"] = (
                "No workflow matched. Try other keywords or a lower similarity_threshold;"
                " if nothing fits, answer with selected_workflow null."
            )
        return ToolResult(ToolCallStatus.SUCCESS, payload)

    async def _search(self, args: SearchWorkflowCatalogArgs) -> list[SearchHit]:
        catalog = self.session.catalog
        query = self.session.context.query(args, max(1, min(args.limit, self.top_k_max)))
        hits = list((await catalog.search(query)).workflows)
        missing = [i for i, hit in enumerate(hits) if hit.parameters is None]
        if missing:
            # Data Storage may omit schemas from search results; the model
            # needs them to fill parameters, so fetch them (cached upstream).
            schemas = await asyncio.gather(
                *(catalog.get_schema(hits[i].workflow_id) for i in missing),
                return_exceptions=True,
            )
            for i, schema in zip(missing, schemas, strict=True):
                if isinstance(schema, asyncio.CancelledError):
                    raise schema
                if not isinstance(schema, BaseException):
                    hits[i] = hits[i].model_copy(
                        update={
                            "parameters": schema.parameters,
                            "preconditions": schema.preconditions,
                            "invariants": schema.invariants,
                            "read_only": schema.read_only,
                            "action_type": schema.action_type or hits[i].action_type,
                        }
                    )
        return hits


@dataclass(frozen=True, slots=True)
class ValidateWorkflowParameters:
    session: CatalogSession
    ledger: ValidationLedger
    gate: SelectionGate | None = None
    name: str = VALIDATE_TOOL
    description: str = VALIDATE_DESCRIPTION
    arguments: type[ValidateWorkflowParametersArgs] = ValidateWorkflowParametersArgs

    async def run(self, args: ValidateWorkflowParametersArgs, ctx: ToolContext) -> ToolResult:
        returned = self.session.returned_workflows
        if args.workflow_id not in returned:
            known = ", ".join(list(returned)[:10]) or "none yet"
            return refused(
                f"workflow_id {one_line(args.workflow_id, 64)!r} was not returned"
                f" by {SEARCH_TOOL} in this investigation (returned: {known})."
                " Use an id from the search results."
            )
        if self.ledger.exhausted:
            return ToolResult(
                ToolCallStatus.LIMIT_EXCEEDED,
                {
                    "error": f"all {self.ledger.max_attempts} validation attempts are used."
                    " Reply now with the final JSON answer: selected_workflow null, the"
                    " workflow in alternative_workflows; a human will review.",
                },
            )
        try:
            schema, outcome = await self.session.call(
                validate_workflow_parameters(
                    self.session.catalog, args.workflow_id, args.parameters
                ),
                ctx.timeout,
            )
        except CatalogFailure as failure:
            return failure_result(failure)
        attempt = self.ledger.record(
            args.workflow_id, args.parameters, outcome, ValidationSource.TOOL, schema
        )
        payload: dict[str, Any] = {
            "workflow_id": args.workflow_id,
            "version": schema.version or returned[args.workflow_id].version,
            **render_validation(outcome),
        }
        left = self.ledger.remaining
        veto = None
        if outcome.valid and self.gate is not None:
            veto = await self.gate.check(
                args.workflow_id, schema, outcome.sanitized, returned[args.workflow_id]
            )
        if veto is not None:
            payload["automation"] = "refused"
            payload["review_reason"] = veto.reason.value
            payload["refused_because"] = veto.message
            payload["next"] = (
                "The parameters are valid but this workflow cannot be automated here. Choose"
                " another workflow whose premise the evidence shows, or answer with"
                " selected_workflow null and this workflow in alternative_workflows."
            )
        elif outcome.valid:
            if outcome.stripped:
                payload["parameters"] = outcome.sanitized
            payload["next"] = "Use these parameters in your final answer."
        elif left:
            payload["attempts_left"] = left
            payload["next"] = "Correct the parameters and validate again."
        else:
            payload["attempts_left"] = 0
            payload["next"] = (
                "No attempts left. Reply now with the final JSON answer: selected_workflow"
                " null, this workflow in alternative_workflows; a human will review."
            )
        return ToolResult(ToolCallStatus.SUCCESS, payload, attempt)


def workflow_catalog_toolset(
    session: CatalogSession,
    ledger: ValidationLedger,
    limits: ToolsetLimits,
    *,
    top_k_max: int = TOP_K_MAX,
    gate: SelectionGate | None = None,
) -> Toolset:
    """The catalog tools bound to one investigation's session, ledger and selection gate."""
    return Toolset(
        NAME,
        (
            SearchWorkflowCatalog(session, top_k_max, gate),
            ValidateWorkflowParameters(session, ledger, gate),
        ),
        limits,
        prompt_note=PROMPT_NOTE,
        investigates=False,
    )


# --- what the model reads ---------------------------------------------------------


def render_validation(outcome: ValidationOutcome) -> dict[str, Any]:
    """Compact verdict for the model; empty lists are omitted."""
    verdict: dict[str, Any] = {"status": "valid" if outcome.valid else "invalid"}
    if outcome.errors:
        verdict["errors"] = [
            {"parameter": e.parameter, "code": e.code.value, "message": e.message}
            for e in outcome.errors
        ]
    if outcome.stripped:
        verdict["stripped_parameters"] = list(outcome.stripped)
    return verdict


_NO_TIME = {"error": "no time left for this tool call; reply now with the final JSON answer."}


def failure_result(failure: CatalogFailure) -> ToolResult:
    """What the model is told when a catalog request gave no answer."""
    kind = failure.kind
    if kind is FailureKind.NO_TIME:
        return ToolResult(ToolCallStatus.TIMEOUT, dict(_NO_TIME))
    if kind is FailureKind.NOT_FOUND:
        return ToolResult(
            ToolCallStatus.ERROR,
            {
                "error": f"workflow {one_line(failure.message, 64)!r} is not in the"
                " catalog; choose another one from the search results."
            },
        )
    if kind is FailureKind.INVALID:
        return refused(failure.message)
    status = ToolCallStatus.TIMEOUT if kind is FailureKind.TIMEOUT else ToolCallStatus.ERROR
    return ToolResult(
        status,
        {
            "error": f"{failure.message}. Continue your analysis without workflow context; if"
            " you cannot select a validated workflow, answer with selected_workflow null.",
            "fallback": DEGRADED_FALLBACK,
        },
    )


def _param_summary(spec: ParameterSpec, role: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": spec.name, "type": spec.type, "required": spec.required}
    if role:  # the role the premise pack binds it to (what the value must be)
        out["role"] = role
    if spec.description:
        out["description"] = one_line(spec.description, _PARAM_DESCRIPTION_CHARS)
    for key in ("enum", "pattern", "minimum", "maximum", "min_length", "max_length", "default"):
        value = getattr(spec, key)
        if value is not None:
            out[key] = list(value) if isinstance(value, tuple) else value
    if spec.depends_on:
        out["depends_on"] = list(spec.depends_on)
    return out


def _premises(
    hit: SearchHit, gate: SelectionGate | None, premises: Premises | None
) -> dict[str, Any]:
    """What a hit needs before it may be automated, and any of it already observed false."""
    out: dict[str, Any] = {}
    if hit.action_type:
        out["action_type"] = one_line(hit.action_type, 64)
    if hit.read_only:
        out["read_only"] = True
    if gate is None or premises is None:
        needs = [c.message or c.name for c in hit.preconditions]
    else:
        declared = (*premises.pack_preconditions, *premises.own_preconditions)
        needs = [d.message or d.name for d in declared]
        if premises.unverified:
            out["premise"] = "none declared for its action type: it is not automated without review"
    if needs:
        out["requires"] = [one_line(n, _DESCRIPTION_CHARS) for n in needs[:8]]
        if gate is not None:
            refuted = gate.refuted(hit.workflow_id, hit)
            if refuted:
                out["premise_not_met"] = [one_line(r.describe(), 400) for r in refuted[:5]]
    return out


def _hit_summary(hit: SearchHit, gate: SelectionGate | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workflow_id": hit.workflow_id,
        "version": hit.version,
        "title": one_line(hit.title, _DESCRIPTION_CHARS),
    }
    if hit.description:
        out["description"] = one_line(hit.description, _DESCRIPTION_CHARS)
    # The taxonomy type, or "unknown" when the catalog gives none (not a guess).
    out["action_type"] = hit.action_type or "unknown"
    out["confidence"] = round(hit.confidence, 4)
    if hit.estimated_risk in tuple(RiskLevel):
        out["estimated_risk"] = str(hit.estimated_risk)
    premises = gate.premises_of(hit.workflow_id, hit, hit=hit) if gate is not None else None
    roles = {p: r for r, p in premises.binding.roles.items()} if premises is not None else {}
    if hit.parameters is None:
        out["parameters"] = "unknown: call validate_workflow_parameters to learn them"
    else:
        out["parameters"] = [_param_summary(spec, roles.get(spec.name)) for spec in hit.parameters]
    out.update(_premises(hit, gate, premises))
    return out
