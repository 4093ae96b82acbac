"""The workflow catalog port: the models it speaks and the interface behind it.

Design notes: docs/internals.md (`domain/catalog.py`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hapi_grpc.domain.cel_cost import OUTSIDE
from hapi_grpc.domain.cel_programs import check_expression, compile_expression
from hapi_grpc.domain.levels import RiskLevel
from hapi_grpc.domain.preconditions import Declared

ParameterType = Literal["string", "integer", "float", "number", "boolean", "array"]

# Workflow ids end up in URL paths (`/api/v1/workflows/{id}/schema`). This
# pattern admits no '/', '?', '#', '%' or whitespace, and no leading dot, so an
# id can never address another path of Data Storage. The proto declares the
# same rule for requests.
WORKFLOW_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_WORKFLOW_ID_RE = re.compile(WORKFLOW_ID_PATTERN)

TOP_K_DEFAULT = 5
TOP_K_MAX = 10
MIN_SCORE_DEFAULT = 0.70


def is_valid_workflow_id(workflow_id: str) -> bool:
    """True when `workflow_id` is safe to put in a URL path segment."""
    return bool(_WORKFLOW_ID_RE.match(workflow_id)) and ".." not in workflow_id


# A list sent as null is an empty one.
NONE_IS_EMPTY = BeforeValidator(lambda value: () if value is None else value)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class ParameterSpec(_Frozen):
    """One entry of a workflow's parameter schema. Unknown keys are informational."""

    model_config = ConfigDict(frozen=True, extra="allow")

    name: str = Field(min_length=1)
    type: ParameterType = "string"
    required: bool = False
    description: str = ""
    pattern: str | None = None
    enum: tuple[Any, ...] | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=0)
    default: Any = None
    depends_on: Annotated[tuple[str, ...], NONE_IS_EMPTY] = ()
    # The parameter's role for the premise packs (`domain.premises.roles`), when the
    # workflow states it: "namespace", "workload", "memory_limit", ...
    role: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$")


class Condition(_Frozen):
    """A declared precondition or invariant: a CEL expression (`domain.preconditions`).

    `expression` and `show` are compiled and type-checked when the entry is
    parsed, so a catalog with a bad expression does not load. Catalogs come from
    outside the service (Data Storage, an operator's file): both are bounded by
    `cel_cost.OUTSIDE` in size and estimated cost.
    """

    name: str = Field(min_length=1, max_length=64)
    expression: str = Field(min_length=1, max_length=4000)
    message: str = Field(default="", max_length=300)
    show: str = Field(default="", max_length=2000)

    @field_validator("expression")
    @classmethod
    def _compiles(cls, value: str) -> str:
        compile_expression(value, OUTSIDE)  # kept: evaluated on every check
        return value

    @field_validator("show")
    @classmethod
    def _checks(cls, value: str) -> str:
        if value:
            check_expression(value, OUTSIDE)  # compiled again only when a failure is reported
        return value

    def declared(self, prefix: str = "") -> Declared:
        """As evaluated, with the bounds it was compiled under; `prefix` names its source."""
        name = f"{prefix}.{self.name}" if prefix else self.name
        return Declared(name, self.expression, self.message, self.show, OUTSIDE)


class Declarations(_Frozen):
    """What a workflow declares about when it may run (shared by the models below)."""

    preconditions: Annotated[tuple[Condition, ...], NONE_IS_EMPTY] = ()
    invariants: Annotated[tuple[Condition, ...], NONE_IS_EMPTY] = ()
    # An explicit declaration that the workflow changes nothing in the cluster.
    read_only: bool = False
    action_type: str = Field(default="", max_length=255)


class WorkflowLabels(_Frozen):
    """Matching labels of a catalog entry; '*' matches any value."""

    signal_type: str = "*"
    severity: str = "*"
    component: str = "*"
    environment: str = "*"
    priority: str = "*"
    custom_labels: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    detected_labels: dict[str, Any] = Field(default_factory=dict)


class Workflow(Declarations):
    """A whole catalog record (`GET /api/v1/workflows/{id}`)."""

    workflow_id: str
    version: str
    title: str
    description: str = ""
    signal_type: str = ""
    labels: WorkflowLabels = Field(default_factory=WorkflowLabels)
    parameters: Annotated[tuple[ParameterSpec, ...], NONE_IS_EMPTY] = ()
    estimated_duration: str = ""
    success_rate: float | None = None
    estimated_risk: RiskLevel | None = None

    def parameter_schema(self) -> WorkflowSchema:
        """This workflow's parameter schema and declarations."""
        return WorkflowSchema(
            workflow_id=self.workflow_id,
            version=self.version,
            parameters=self.parameters,
            preconditions=self.preconditions,
            invariants=self.invariants,
            read_only=self.read_only,
            action_type=self.action_type,
        )


class WorkflowSchema(Declarations):
    """A workflow's parameter schema (`GET /api/v1/workflows/{id}/schema`)."""

    workflow_id: str
    version: str = ""
    parameters: Annotated[tuple[ParameterSpec, ...], NONE_IS_EMPTY] = ()


class SearchFilters(_Frozen):
    """Hard filters and ranking context of a search.

    `custom_labels`, `detected_labels` never come from the LLM: the engine
    appends them from the incident (DD-HAPI-001).
    """

    signal_type: str | None = None
    severity: str | None = None
    component: str | None = None
    environment: str | None = None
    priority: str | None = None
    custom_labels: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    detected_labels: dict[str, Any] = Field(default_factory=dict)


class SearchQuery(_Frozen):
    """`POST /api/v1/workflows/search` request body."""

    query: str = Field(min_length=1, max_length=1024)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    top_k: int = Field(default=TOP_K_DEFAULT, ge=1, le=TOP_K_MAX)
    min_score: float = Field(default=MIN_SCORE_DEFAULT, ge=0.0, le=1.0)
    remediation_id: str = ""

    def to_wire(self) -> dict[str, Any]:
        """JSON body as Data Storage expects it: empty filters and labels omitted."""
        body = self.model_dump(mode="json", exclude_none=True)
        filters = {k: v for k, v in body.pop("filters").items() if v != {}}  # labels
        if filters:
            body["filters"] = filters
        if not self.remediation_id:
            del body["remediation_id"]
        return body


class SearchHit(Declarations):
    """One workflow in a search answer, with its match `confidence` in [0, 1]."""

    workflow_id: str
    version: str
    title: str = ""
    description: str = ""
    signal_type: str = ""
    confidence: float = Field(ge=0.0, le=1.0)
    estimated_duration: str = ""
    success_rate: float | None = None
    estimated_risk: RiskLevel | None = None
    parameters: tuple[ParameterSpec, ...] | None = None
    # The infrastructure the workflow requires (e.g. `gitOpsManaged: true`), when the
    # catalog sends it with the hit (the embedded catalog does; premises read it).
    detected_labels: dict[str, Any] = Field(default_factory=dict)


class SearchResult(_Frozen):
    """`POST /api/v1/workflows/search` response body, best match first.

    An entry whose declared conditions do not compile or are refused (CEL over
    its cost bounds) is left out and named in `refused` ("id: reason"): one bad
    workflow does not fail the search. Any other malformed field still breaks
    the answer's contract.
    """

    workflows: tuple[SearchHit, ...] = ()
    total_results: int = 0
    refused: tuple[str, ...] = Field(default=(), exclude=True)  # set here, never read

    @model_validator(mode="wrap")
    @classmethod
    def _usable_hits(cls, data: Any, handler: Any) -> Any:
        if isinstance(data, dict):
            data = {**data, "refused": ()}  # never read from the answer
        try:
            return handler(data)
        except ValidationError as exc:
            hits = data.get("workflows") if isinstance(data, dict) else None
            refused = _declaration_errors(exc, hits)
            if not refused or not isinstance(hits, list | tuple):
                raise
        kept = [hit for index, hit in enumerate(hits) if index not in refused]
        return handler({**data, "workflows": kept, "refused": tuple(refused.values())})


def _declaration_errors(exc: ValidationError, hits: Any) -> dict[int, str]:
    """{hit index: "id: where: problem"} when every error is in a hit's declared
    conditions; empty when any other field is wrong (the answer breaks its contract)."""
    refused: dict[int, str] = {}
    for error in exc.errors(include_url=False, include_input=False):
        loc = error["loc"]
        if len(loc) < 3 or loc[0] != "workflows" or loc[2] not in ("preconditions", "invariants"):
            return {}
        index = loc[1]
        if not isinstance(index, int) or index in refused:
            continue
        hit = hits[index] if isinstance(hits, list | tuple) and index < len(hits) else None
        name = hit.get("workflow_id") if isinstance(hit, dict) else None
        label = name[:128] if isinstance(name, str) and name else f"#{index}"
        where = ".".join(str(p) for p in loc[2:])
        refused[index] = f"{label}: {where}: {error['msg'][:300]}"
    return refused


@runtime_checkable
class WorkflowCatalog(Protocol):
    """What the investigation and the validation RPC need from a catalog.

    Implementations raise `WorkflowNotFoundError` for unknown ids and
    `CatalogUnavailableError` (or its subclass `CatalogContractError`) when
    they cannot answer. Timeouts follow `hapi_grpc.domain.deadline`.
    """

    async def search(self, query: SearchQuery) -> SearchResult: ...

    async def get_schema(self, workflow_id: str) -> WorkflowSchema: ...

    async def get_workflow(self, workflow_id: str) -> Workflow: ...

    async def close(self) -> None: ...
