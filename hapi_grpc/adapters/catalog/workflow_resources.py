"""RemediationWorkflow and ActionType resources (`kubernaut.ai/v1alpha1`) as catalog entries.

Design notes: docs/internals.md (`adapters/catalog/workflow_resources.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from hapi_grpc.adapters.catalog.loader import catalog_problems
from hapi_grpc.adapters.catalog.scoring import IndexedWorkflow, index_workflow
from hapi_grpc.adapters.kubernetes.reader import ResourceType
from hapi_grpc.domain.catalog import ParameterSpec, SearchFilters, Workflow, WorkflowLabels
from hapi_grpc.domain.parameters import MAX_PATTERN_LENGTH

__all__ = [
    "ACTION_TYPES",
    "ACTIVE",
    "WORKFLOWS",
    "ActionTypeResource",
    "LabelSets",
    "WorkflowResource",
    "read_action_type",
    "read_workflow",
]

GROUP = "kubernaut.ai"
VERSION = "v1alpha1"
WORKFLOWS = ResourceType(GROUP, VERSION, "RemediationWorkflow", "remediationworkflows", True)
ACTION_TYPES = ResourceType(GROUP, VERSION, "ActionType", "actiontypes", True, ("at",))
ACTIVE = "Active"
ACTION_TYPE_PATTERN = r"^[A-Z][A-Za-z0-9]*$"

# Bounds of what is read (the CRDs under deploy/crds declare the same).
MAX_TEXT = 2000  # each description part
MAX_PARAMETERS = 64
MAX_LABEL_VALUES = 16
MAX_CUSTOM_LABELS = 32
_LABEL_VALUE = 253
_PART = 68  # characters of "when to use" and of "when not to use" in the description
_WILDCARD = "*"


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class _Description(_Read):
    what: str = Field("", max_length=MAX_TEXT)
    when_to_use: str = Field("", alias="whenToUse", max_length=MAX_TEXT)
    when_not_to_use: str = Field("", alias="whenNotToUse", max_length=MAX_TEXT)
    preconditions: str = Field("", max_length=MAX_TEXT)


def _listed(value: Any) -> Any:
    """A single value where a list is expected (older resources) as a list of one."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


# One value or a list of them, each bounded.
_Values = Annotated[
    list[Annotated[str, Field(max_length=_LABEL_VALUE)]],
    BeforeValidator(_listed),
    Field(default_factory=list, max_length=MAX_LABEL_VALUES),
]


class _Labels(_Read):
    severity: _Values
    environment: _Values
    component: _Values
    priority: _Values


class _Parameter(_Read):
    name: str = Field(min_length=1, max_length=128)
    type: str = Field("string", max_length=16)
    required: bool = False
    description: str = Field("", max_length=MAX_TEXT)
    enum: list[Any] | None = Field(None, max_length=256)
    pattern: str | None = Field(None, max_length=MAX_PATTERN_LENGTH)
    minimum: int | float | None = None
    maximum: int | float | None = None
    default: Any = None
    depends_on: list[str] = Field(default_factory=list, alias="dependsOn", max_length=32)

    def spec(self) -> ParameterSpec:
        # Field names, not the resource's spellings; an empty pattern is none.
        return ParameterSpec.model_validate({**self.model_dump(), "pattern": self.pattern or None})


class _WorkflowSpec(_Read):
    version: str = Field(min_length=1, max_length=50)
    action_type: str = Field(alias="actionType", max_length=255, pattern=ACTION_TYPE_PATTERN)
    description: _Description = _Description.model_validate({})
    labels: _Labels = _Labels.model_validate({})
    custom_labels: dict[str, str | list[str]] = Field(
        default_factory=dict, alias="customLabels", max_length=MAX_CUSTOM_LABELS
    )
    detected_labels: dict[str, Any] = Field(
        default_factory=dict, alias="detectedLabels", max_length=MAX_CUSTOM_LABELS
    )
    parameters: list[_Parameter] = Field(default_factory=list, max_length=MAX_PARAMETERS)


class _ActionTypeSpec(_Read):
    name: str = Field(min_length=1, max_length=255, pattern=ACTION_TYPE_PATTERN)
    description: _Description = _Description.model_validate({})


@dataclass(frozen=True, slots=True)
class LabelSets:
    """A workflow's matching labels, each a set of lowercase values (empty: any)."""

    severity: frozenset[str] = frozenset()
    environment: frozenset[str] = frozenset()
    component: frozenset[str] = frozenset()
    priority: frozenset[str] = frozenset()

    @classmethod
    def of(cls, labels: _Labels) -> LabelSets:
        def values(items: list[str], kinds: bool = False) -> frozenset[str]:
            found = {v.strip().lower() for v in items if v.strip()}
            if _WILDCARD in found:
                return frozenset()
            if kinds:  # a component given as group/version/Kind also matches its Kind
                found |= {v.rsplit("/", 1)[-1] for v in found}
            return frozenset(found)

        return cls(
            values(labels.severity),
            values(labels.environment),
            values(labels.component, kinds=True),
            values(labels.priority),
        )

    def admit(self, filters: SearchFilters) -> bool:
        for name in ("severity", "environment", "component", "priority"):
            wanted = getattr(filters, name)
            have: frozenset[str] = getattr(self, name)
            if wanted and wanted != _WILDCARD and have and wanted.strip().lower() not in have:
                return False
        return True

    def single(self, name: str) -> str:
        """The one value of a label, else `*` (what a `WorkflowLabels` can hold)."""
        have: frozenset[str] = getattr(self, name)
        return next(iter(have)) if len(have) == 1 else _WILDCARD


@dataclass(frozen=True, slots=True)
class WorkflowResource:
    """One RemediationWorkflow as read; `workflow` None when it was left out."""

    namespace: str
    name: str
    status: str
    action_type: str = ""
    workflow: Workflow | None = None
    indexed: IndexedWorkflow | None = None  # its search view, indexed
    labels: LabelSets = LabelSets()
    problem: str = ""


@dataclass(frozen=True, slots=True)
class ActionTypeResource:
    """One ActionType as read; `name` is the type it declares ("" when unreadable)."""

    namespace: str
    resource: str
    name: str
    status: str
    problem: str = ""


def _meta(obj: dict[str, Any]) -> tuple[str, str, str]:
    metadata: dict[str, Any] = obj.get("metadata") or {}
    status: dict[str, Any] = obj.get("status") or {}
    if not isinstance(metadata, dict):
        metadata = {}
    catalog_status = status.get("catalogStatus") if isinstance(status, dict) else ""
    return (
        str(metadata.get("namespace") or "")[:253],
        str(metadata.get("name") or "")[:253],
        catalog_status if isinstance(catalog_status, str) else "",
    )


def _problem(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in first["loc"]) or "spec"
    return f"spec.{where}: {first['msg']}"[:300]


def read_action_type(obj: dict[str, Any]) -> ActionTypeResource:
    namespace, resource, status = _meta(obj)
    try:
        spec = _ActionTypeSpec.model_validate(obj.get("spec") or {})
    except ValidationError as exc:
        return ActionTypeResource(namespace, resource, "", status, _problem(exc))
    return ActionTypeResource(namespace, resource, spec.name, status)


def read_workflow(obj: dict[str, Any]) -> WorkflowResource:
    namespace, name, status = _meta(obj)
    try:
        spec = _WorkflowSpec.model_validate(obj.get("spec") or {})
        parameters = tuple(p.spec() for p in spec.parameters)
    except ValidationError as exc:
        return WorkflowResource(namespace, name, status, problem=_problem(exc))
    labels = LabelSets.of(spec.labels)
    workflow = Workflow(
        workflow_id=name,
        version=spec.version,
        title=spec.description.what.strip() or name,
        description=_shown_description(spec.description),
        labels=_single_labels(spec, labels),
        parameters=parameters,
        action_type=spec.action_type,
    )
    problems = catalog_problems([workflow])
    if problems:
        problem = problems[0].split(": ", 1)[-1]
        return WorkflowResource(namespace, name, status, spec.action_type, problem=problem[:300])
    indexed = index_workflow(search_view(workflow, spec))
    return WorkflowResource(namespace, name, status, spec.action_type, workflow, indexed, labels)


def _shown_description(description: _Description) -> str:
    """When to use it and when not, each cut to half of what a search result shows
    (160 characters) so both are read; then the stated preconditions, whole."""
    parts = [
        f"{label}: {_cut(text, _PART)}"
        for label, text in (
            ("Use when", description.when_to_use),
            ("Not when", description.when_not_to_use),
        )
        if text.strip()
    ]
    if description.preconditions.strip():
        parts.append(f"Preconditions: {' '.join(description.preconditions.split())}")
    return " ".join(parts)


def _cut(text: str, limit: int) -> str:
    words = " ".join(text.split())
    if len(words) <= limit:
        return words
    return words[: limit - 1].rsplit(" ", 1)[0] + "…"


def _single_labels(spec: _WorkflowSpec, labels: LabelSets) -> WorkflowLabels:
    return WorkflowLabels(
        severity=labels.single("severity"),
        environment=labels.single("environment"),
        component=_one(spec.labels.component),
        priority=labels.single("priority"),
        custom_labels={key: tuple(_listed(value)) for key, value in spec.custom_labels.items()},
        detected_labels=dict(spec.detected_labels),
    )


def _one(values: list[str]) -> str:
    return values[0] if len(values) == 1 else _WILDCARD


def search_view(workflow: Workflow, spec: _WorkflowSpec) -> Workflow:
    """What the search scores (docs/internals.md); hits show `workflow` itself."""
    description = spec.description
    title = " ".join(
        (description.what, description.when_to_use, *spec.labels.component, spec.action_type)
    )
    return workflow.model_copy(
        update={
            "title": title,
            "description": "",
            "signal_type": spec.action_type,  # the category a query can name
            "labels": workflow.labels.model_copy(update={"component": _WILDCARD}),
        }
    )
