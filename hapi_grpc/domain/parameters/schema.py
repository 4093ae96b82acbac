"""The compiled-schema model and its cache.

A schema is compiled once into rules (`rules`) and their phrases
(`wording`); `CompiledSchema.check` runs them over proposed parameters.
Compiled schemas sit in a bounded LRU cache keyed by the identity of the
catalog's frozen parameter tuple.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from hapi_grpc.domain.catalog import ParameterSpec, Workflow, WorkflowSchema
from hapi_grpc.domain.parameters.display import log_text
from hapi_grpc.domain.parameters.outcome import ParameterIssue
from hapi_grpc.domain.parameters.rules import RULE_TYPES, Finding, Rule
from hapi_grpc.domain.parameters.wording import Phrases

__all__ = ["CompiledSchema", "compiled"]

logger = logging.getLogger("hapi_grpc.domain.parameters")

_SCHEMA_CACHE_SIZE = 256

_ABSENT: Any = object()


class CompiledSchema:
    """A schema turned into rules: the form that `validate_parameters` runs."""

    __slots__ = ("entries", "names")

    def __init__(self, specs: Sequence[ParameterSpec]) -> None:
        rules: dict[str, Rule] = {}
        kept: list[ParameterSpec] = []
        for spec in specs:
            if not isinstance(spec, ParameterSpec):
                raise TypeError(f"schema entries must be ParameterSpec, not {type(spec).__name__}")
            if spec.name in rules:
                # The first declaration wins; a catalog should never repeat a name.
                logger.warning(
                    "Parameter %s is declared twice; the first one is used", log_text(spec.name)
                )
                continue
            rules[spec.name] = RULE_TYPES[spec.type](spec)
            kept.append(spec)
        phrases = {spec.name: Phrases(rules[spec.name], spec) for spec in kept}
        for spec in kept:
            rules[spec.name].link(spec, rules)
        for entry in phrases.values():
            entry.link(phrases)
        self.entries: tuple[tuple[Rule, Phrases], ...] = tuple(
            (rules[name], phrases[name]) for name in rules
        )
        self.names = frozenset(rules)

    def check(
        self, parameters: Mapping[str, Any]
    ) -> tuple[list[ParameterIssue], dict[str, Any], int]:
        """The issues, the sanitized values and how many keys are undeclared."""
        errors: list[ParameterIssue] = []
        found: list[Finding] = []
        sanitized: dict[str, Any] = {}
        get = parameters.get
        declared_keys = 0
        for rule, phrases in self.entries:
            value = get(rule.name, _ABSENT)
            if value is not _ABSENT:
                declared_keys += 1
            if value is None or value is _ABSENT or (isinstance(value, str) and not value):
                if rule.required:
                    errors.append(phrases.missing_issue)
                continue
            checked = rule.check(value, found)
            if found:
                errors.extend(map(phrases.issue, found))
                found.clear()
            else:  # only values that passed their own checks are kept
                sanitized[rule.name] = checked
            if rule.deps:
                rule.check_deps(get, found)
                if found:
                    errors.extend(map(phrases.issue, found))
                    found.clear()
        return errors, sanitized, len(parameters) - declared_keys


_schema_cache: OrderedDict[Any, tuple[tuple[ParameterSpec, ...], CompiledSchema]] = OrderedDict()
_schema_lock = threading.Lock()


def compiled(schema: Sequence[ParameterSpec] | WorkflowSchema | Workflow) -> CompiledSchema:
    """The compiled form of `schema`, from a bounded LRU cache.

    Catalog models are frozen, so a schema is keyed by the identity of its
    parameter tuple (or of each entry when a list is given). The cache holds a
    reference to the entries, so an identity cannot be reused while cached.
    """
    specs = schema.parameters if isinstance(schema, WorkflowSchema | Workflow) else schema
    if type(specs) is tuple:
        kept: tuple[ParameterSpec, ...] = specs
        key: Any = id(specs)
    else:
        kept = tuple(specs)
        key = tuple(map(id, kept))
    with _schema_lock:
        entry = _schema_cache.get(key)
        if entry is not None:
            _schema_cache.move_to_end(key)
            return entry[1]
    result = CompiledSchema(kept)
    with _schema_lock:
        _schema_cache[key] = (kept, result)
        _schema_cache.move_to_end(key)
        while len(_schema_cache) > _SCHEMA_CACHE_SIZE:
            _schema_cache.popitem(last=False)
    return result
