"""Load and check workflow catalog files (YAML or JSON).

Design notes: docs/internals.md (`adapters/catalog/loader.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import re2
import yaml
from pydantic import ValidationError

from hapi_grpc.adapters.catalog.scoring import version_key
from hapi_grpc.domain import bounded_json, bounded_yaml
from hapi_grpc.domain.catalog import ParameterSpec, Workflow, is_valid_workflow_id
from hapi_grpc.domain.parameters import MAX_PATTERN_LENGTH

BUNDLED_PACKAGE = "hapi_grpc.data"
BUNDLED_FILE = "catalog.yaml"

MAX_CATALOG_BYTES = 16 * 1024 * 1024
MAX_WORKFLOWS = 10_000
MAX_REPORTED_PROBLEMS = 10
MAX_ERRORS_PER_ENTRY = 3

_PARAMETER_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_NUMERIC_TYPES = frozenset({"integer", "float", "number"})

# Compile patterns as the parameter validator does (RE2, 1 MiB per program),
# so a pattern it would have to treat as unusable is refused at startup.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the error is reported in our message instead
_RE2_OPTIONS.max_mem = 1 << 20


class CatalogFileError(ValueError):
    """A catalog file cannot be used. `problems` lists each problem found."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        shown = "; ".join(self.problems[:MAX_REPORTED_PROBLEMS])
        more = len(self.problems) - MAX_REPORTED_PROBLEMS
        suffix = f" (+{more} more)" if more > 0 else ""
        super().__init__(f"catalog {source}: {shown}{suffix}")


def load_catalog_file(path: str | Path) -> list[Workflow]:
    """Parse and check a YAML (.yaml/.yml) or JSON (.json) catalog file."""
    path = Path(path)
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json"):
        raise CatalogFileError(
            source, [f"unsupported file extension {suffix!r} (use .yaml, .yml or .json)"]
        )
    try:
        size = path.stat().st_size
        if size > MAX_CATALOG_BYTES:
            raise CatalogFileError(
                source, [f"file is {size} bytes, larger than the {MAX_CATALOG_BYTES} byte limit"]
            )
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogFileError(source, [f"cannot read file: {exc.strerror or exc}"]) from exc
    except UnicodeDecodeError as exc:
        raise CatalogFileError(source, [f"file is not UTF-8: {exc.reason}"]) from exc
    return parse_catalog_text(text, source, "json" if suffix == ".json" else "yaml")


def load_bundled_catalog() -> list[Workflow]:
    """The catalog shipped in the package (`hapi_grpc/data/catalog.yaml`)."""
    resource = resources.files(BUNDLED_PACKAGE).joinpath(BUNDLED_FILE)
    return parse_catalog_text(
        resource.read_text(encoding="utf-8"), f"<bundled {BUNDLED_FILE}>", "yaml"
    )


def parse_catalog_text(text: str, source: str, fmt: str) -> list[Workflow]:
    """Parse catalog `text` in `fmt` ('yaml' or 'json'); `source` names it in errors."""
    try:
        if fmt == "json":
            document = bounded_json.loads(text, max_bytes=MAX_CATALOG_BYTES)
        else:
            document = bounded_yaml.load(text)
    except json.JSONDecodeError as exc:
        raise CatalogFileError(
            source, [f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]
        ) from exc
    except yaml.YAMLError as exc:
        raise CatalogFileError(source, [f"not valid YAML: {_yaml_problem(exc)}"]) from exc

    if isinstance(document, dict) and "workflows" not in document:
        raise CatalogFileError(
            source, ["expected a list of workflows or a mapping with a 'workflows' key"]
        )
    entries = document.get("workflows") if isinstance(document, dict) else document
    if entries is None or entries == []:
        raise CatalogFileError(source, ["catalog is empty: it declares no workflows"])
    if not isinstance(entries, list):
        raise CatalogFileError(
            source,
            [
                "expected a list of workflows or a mapping with a 'workflows' list, "
                f"got {_kind(entries)}"
            ],
        )
    if len(entries) > MAX_WORKFLOWS:
        raise CatalogFileError(
            source, [f"{len(entries)} workflows, more than the limit of {MAX_WORKFLOWS}"]
        )

    problems: list[str] = []
    workflows: list[Workflow] = []
    positions: list[int] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append(f"entry #{index}: expected a mapping, got {_kind(entry)}")
            continue
        try:
            workflow = Workflow.model_validate(_with_label_defaults(entry))
        except ValidationError as exc:
            problems.append(f"{_entry_name(index, entry.get('workflow_id'))}: {_summary(exc)}")
            continue
        workflows.append(workflow)
        positions.append(index)
    problems.extend(catalog_problems(workflows, positions))
    if problems:
        raise CatalogFileError(source, problems)
    return workflows


def catalog_problems(
    workflows: Sequence[Workflow], positions: Sequence[int] | None = None
) -> list[str]:
    """Problems of already parsed workflows, one message per problem.

    `positions` gives each workflow's index in its file (defaults to its index
    in `workflows`), so messages point at the right entry.
    """
    indexes = list(positions) if positions is not None else list(range(len(workflows)))
    problems: list[str] = []
    seen: dict[tuple[str, tuple[Any, ...]], int] = {}
    for index, workflow in zip(indexes, workflows, strict=True):
        name = _entry_name(index, workflow.workflow_id)
        problems.extend(f"{name}: {problem}" for problem in _workflow_problems(workflow))
        key = (workflow.workflow_id, version_key(workflow.version))
        if key in seen:
            problems.append(
                f"{name}: duplicate of entry #{seen[key]} "
                f"(same workflow_id and version {workflow.version!r})"
            )
        else:
            seen[key] = index
    return problems


def _workflow_problems(workflow: Workflow) -> list[str]:
    problems: list[str] = []
    if not is_valid_workflow_id(workflow.workflow_id):
        problems.append(
            f"workflow_id {workflow.workflow_id!r} is not a safe identifier (letters, digits, "
            "'.', '_', '-'; starts with a letter or digit; at most 128 characters; no '..')"
        )
    if not workflow.version.strip():
        problems.append("version must not be empty")
    if not workflow.title.strip():
        problems.append("title must not be empty")
    label = workflow.labels.signal_type
    if workflow.signal_type and label != workflow.signal_type:
        problems.append(
            f"signal_type {workflow.signal_type!r} differs from labels.signal_type {label!r}"
        )
    if workflow.success_rate is not None and not 0.0 <= workflow.success_rate <= 1.0:
        problems.append(f"success_rate {workflow.success_rate} is outside [0, 1]")

    names = [spec.name for spec in workflow.parameters]
    declared = set(names)
    seen: set[str] = set()
    for position, spec in enumerate(workflow.parameters):
        where = f"parameters.{position} ({spec.name})"
        if spec.name in seen:
            problems.append(f"{where}: duplicate parameter name")
        seen.add(spec.name)
        problems.extend(f"{where}: {problem}" for problem in _parameter_problems(spec, declared))
    return problems


def _parameter_problems(spec: ParameterSpec, declared: set[str]) -> list[str]:
    problems: list[str] = []
    if not _PARAMETER_NAME_RE.match(spec.name):
        problems.append("name must be UPPER_SNAKE_CASE")
    numeric = spec.type in _NUMERIC_TYPES
    if not numeric and (spec.minimum is not None or spec.maximum is not None):
        problems.append(f"minimum/maximum apply to numbers, not to type {spec.type!r}")
    if spec.type != "string" and (
        spec.pattern is not None or spec.min_length is not None or spec.max_length is not None
    ):
        problems.append(
            f"pattern/min_length/max_length apply to strings, not to type {spec.type!r}"
        )
    for bound, value in (("minimum", spec.minimum), ("maximum", spec.maximum)):
        if isinstance(value, bool):
            problems.append(f"{bound} must be a number, not a boolean")
    if spec.minimum is not None and spec.maximum is not None and spec.minimum > spec.maximum:
        problems.append(f"minimum {spec.minimum} is greater than maximum {spec.maximum}")
    if (
        spec.min_length is not None
        and spec.max_length is not None
        and spec.min_length > spec.max_length
    ):
        problems.append(
            f"min_length {spec.min_length} is greater than max_length {spec.max_length}"
        )
    compiled = None
    if spec.pattern is not None and len(spec.pattern) > MAX_PATTERN_LENGTH:
        problems.append(f"pattern is longer than {MAX_PATTERN_LENGTH} characters")
    elif spec.pattern is not None:
        try:
            compiled = re2.compile(spec.pattern, _RE2_OPTIONS)
        except re2.error as exc:
            detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
            problems.append(f"pattern {spec.pattern!r} is not a valid RE2 expression: {detail}")
    if spec.enum is not None:
        if not spec.enum:
            problems.append("enum must list at least one value")
        for value in spec.enum:
            if not _has_type(value, spec.type):
                problems.append(f"enum value {value!r} is not of type {spec.type!r}")
    for dependency in spec.depends_on:
        if dependency == spec.name:
            problems.append("depends_on names the parameter itself")
        elif dependency not in declared:
            problems.append(f"depends_on names undeclared parameter {dependency!r}")
    if spec.default is not None:
        problems.extend(_default_problems(spec, compiled))
    return problems


def _default_problems(spec: ParameterSpec, compiled: Any) -> list[str]:
    value = spec.default
    if not _has_type(value, spec.type):
        return [f"default {value!r} is not of type {spec.type!r}"]
    problems: list[str] = []
    if spec.enum is not None and value not in spec.enum:
        problems.append(f"default {value!r} is not one of the enum values {list(spec.enum)}")
    if spec.type in _NUMERIC_TYPES:
        if spec.minimum is not None and value < spec.minimum:
            problems.append(f"default {value} is below minimum {spec.minimum}")
        if spec.maximum is not None and value > spec.maximum:
            problems.append(f"default {value} is above maximum {spec.maximum}")
    if spec.type == "string":
        if spec.min_length is not None and len(value) < spec.min_length:
            problems.append(f"default {value!r} is shorter than min_length {spec.min_length}")
        if spec.max_length is not None and len(value) > spec.max_length:
            problems.append(f"default {value!r} is longer than max_length {spec.max_length}")
        if compiled is not None and compiled.search(value) is None:
            problems.append(f"default {value!r} does not match pattern {spec.pattern!r}")
    return problems


def _has_type(value: Any, type_name: str) -> bool:
    """The contract's type rules: no numeric strings, no bools as numbers."""
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name in ("float", "number"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "array":
        return isinstance(value, list | tuple)
    return False


def _with_label_defaults(entry: dict[str, Any]) -> dict[str, Any]:
    """Let labels.signal_type default to the entry's signal_type (and back).

    Without this, an entry that states its signal type only once would carry
    the wildcard label and match every signal filter.
    """
    labels = entry.get("labels")
    if labels is None:
        labels = {}
    if not isinstance(labels, dict):
        return entry  # the model reports the wrong type
    signal = entry.get("signal_type")
    label = labels.get("signal_type")
    if signal and label is None:
        return {**entry, "labels": {**labels, "signal_type": signal}}
    if label and signal is None:
        return {**entry, "signal_type": label}
    return entry


def _summary(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:MAX_ERRORS_PER_ENTRY]:
        location = ".".join(str(part) for part in error["loc"]) or "<entry>"
        parts.append(f"{location}: {error['msg']}")
    more = len(errors) - MAX_ERRORS_PER_ENTRY
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def _entry_name(index: int, workflow_id: Any) -> str:
    if isinstance(workflow_id, str) and workflow_id:
        return f"entry #{index} ({workflow_id})"
    return f"entry #{index}"


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{problem} at line {mark.line + 1} column {mark.column + 1}"
    return str(problem)
