"""Workflow search semantics shared by the embedded catalog and the REST server.

Design notes: docs/internals.md (`adapters/catalog/scoring.py`).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.catalog import (
    SearchFilters,
    SearchHit,
    SearchQuery,
    SearchResult,
    Workflow,
    WorkflowLabels,
)

WILDCARD = "*"

SIGNAL_MATCH_BASE = 0.85
SIGNAL_MATCH_TEXT_WEIGHT = 0.10
OTHER_SIGNAL_CAP = 0.45
TEXT_ONLY_CAP = 0.80

CUSTOM_EXACT_BOOST = 0.15
CUSTOM_WILDCARD_BOOST = 0.075
CUSTOM_BOOST_CAP = 0.15
DETECTED_EXACT_BOOST = 0.05
DETECTED_WILDCARD_BOOST = 0.025
DETECTED_BOOST_CAP = 0.05

TITLE_CREDIT = 1.0  # word found in the title, signal type, id or component
DESCRIPTION_CREDIT = 0.7  # word found only in the description
CAMEL_PART_CREDIT = 0.5  # scale of the partial credit from CamelCase parts

# A query is at most 1024 characters (SearchQuery); this bounds the work per
# search even for a caller that bypasses the model.
MAX_QUERY_WORDS = 256

# Searches an index remembers, most recent first. An index never changes, so an
# answer stays right; an alert storm asks the same few questions a thousand
# times, and scoring every workflow costs more than the rest of a tool call.
SEARCH_CACHE_SIZE = 256

_FILTER_FIELDS = ("signal_type", "severity", "component", "environment", "priority")

# Label vocabularies whose words describe the incident's context, not the fix.
_CONTEXT_VOCABULARY: dict[str, frozenset[str]] = {
    "severity": frozenset({"critical", "high", "medium", "low", "warning", "info", "page"}),
    "environment": frozenset(
        {"production", "prod", "staging", "stage", "development", "dev", "test", "qa"}
    ),
    "priority": frozenset({"p0", "p1", "p2", "p3", "p4"}),
}

_STOPWORDS = frozenset(
    "a an and are as at be by for from in into is it its of on or per the this that "
    "to via with when after".split()
)

_WORD_RE = re.compile(r"[A-Za-z0-9]+")
# Splits 'OOMKilled' -> OOM, Killed; 'CrashLoopBackOff' -> Crash, Loop, Back, Off.
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def stem(word: str) -> str:
    """A deliberately small suffix stripper: 'restarting', 'restarts' -> 'restart'.

    Both sides of a comparison go through it, so it only has to be consistent,
    not linguistically right.
    """
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


@dataclass(frozen=True, slots=True)
class QueryWord:
    """One word of a query: lowercase form, its stem and its CamelCase part stems."""

    lower: str
    stem: str
    parts: tuple[str, ...]


def split_words(text: str) -> list[str]:
    """Alphanumeric words of `text`, original case kept."""
    return _WORD_RE.findall(text)


def camel_parts(word: str) -> list[str]:
    """Lowercase CamelCase parts of `word`; a single part when it has none."""
    return [part.lower() for part in _CAMEL_RE.findall(word)] or [word.lower()]


def text_terms(text: str) -> set[str]:
    """Stems of every word of `text` and of every CamelCase part of those words."""
    terms: set[str] = set()
    for word in split_words(text):
        terms.add(stem(word.lower()))
        terms.update(stem(part) for part in camel_parts(word))
    return terms


def query_words(query: str) -> list[QueryWord]:
    """The query's words (stopwords dropped), at most MAX_QUERY_WORDS of them."""
    words: list[QueryWord] = []
    for word in split_words(query)[:MAX_QUERY_WORDS]:
        lower = word.lower()
        if lower in _STOPWORDS:
            continue
        parts = camel_parts(word)
        words.append(
            QueryWord(lower, stem(lower), tuple(stem(p) for p in parts) if len(parts) > 1 else ())
        )
    return words


def version_key(version: str) -> tuple[Any, ...]:
    """Sort key for versions: '1.10.0' > '1.9.0' > '1.9.0-rc1'; 'v2' == '2'.

    Numeric dot-separated parts compare as numbers, other parts as text below
    any number; a pre-release suffix ('-rc1') sorts before the plain release.
    """
    text = version.strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    text = text.split("+", 1)[0]  # build metadata does not order versions
    release, _, pre = text.partition("-")

    def parts(value: str) -> tuple[tuple[int, int, str], ...]:
        return tuple(
            (1, int(p), "") if p.isascii() and p.isdigit() else (0, 0, p.lower())
            for p in re.split(r"[.\-_]", value)
            if p
        )

    # Trailing '.0' parts do not make a version newer: '1.0' == '1.0.0'.
    main = list(parts(release))
    while len(main) > 1 and main[-1] == (1, 0, ""):
        main.pop()
    return (tuple(main), 0 if pre else 1, parts(pre))


@dataclass(frozen=True, slots=True)
class IndexedWorkflow:
    """A workflow with everything a search needs precomputed."""

    workflow: Workflow
    signals: frozenset[str]  # lowercase signal types; empty for a `*` workflow
    title_terms: frozenset[str]
    description_terms: frozenset[str]
    context_labels: tuple[tuple[str, str], ...]  # (dimension, lowercase label value)
    sort_version: tuple[Any, ...]

    @property
    def generic(self) -> bool:
        """True for a workflow that applies to any signal type."""
        return not self.signals


def index_workflow(workflow: Workflow) -> IndexedWorkflow:
    """Precompute the token sets and labels of one workflow."""
    labels = workflow.labels
    signals = frozenset(
        s.lower() for s in (workflow.signal_type, labels.signal_type) if s and s != WILDCARD
    )
    title_text = " ".join(
        [
            workflow.title,
            workflow.workflow_id.replace(".", " "),
            *(s for s in (workflow.signal_type, labels.signal_type) if s != WILDCARD),
            labels.component if labels.component != WILDCARD else "",
        ]
    )
    title_terms = frozenset(text_terms(title_text))
    description_terms = frozenset(text_terms(workflow.description) - title_terms)
    context = tuple((dim, getattr(labels, dim).lower()) for dim in _CONTEXT_VOCABULARY)
    return IndexedWorkflow(
        workflow=workflow,
        signals=signals,
        title_terms=title_terms,
        description_terms=description_terms,
        context_labels=context,
        sort_version=version_key(workflow.version),
    )


def passes_filters(workflow: Workflow, filters: SearchFilters) -> bool:
    """The default hard filter: every given filter value must match the workflow's
    single-valued label or `*`."""
    for name in _FILTER_FIELDS:
        wanted = getattr(filters, name)
        if not wanted or wanted == WILDCARD:
            continue
        have = getattr(workflow.labels, name)
        if have != WILDCARD and have.lower() != wanted.lower():
            return False
    return True


def _same_detected_value(have: Any, wanted: Any) -> bool:
    # bool is an int subclass: True must not match 1.
    if isinstance(have, bool) or isinstance(wanted, bool):
        return isinstance(have, bool) and isinstance(wanted, bool) and have == wanted
    if isinstance(have, str) and isinstance(wanted, str):
        return have.lower() == wanted.lower()
    return bool(have == wanted)


def label_boost(labels: WorkflowLabels, filters: SearchFilters) -> float:
    """Ranking boost from the incident's custom and detected labels."""
    custom = 0.0
    for key, wanted in filters.custom_labels.items():
        have = labels.custom_labels.get(key)
        if not have:
            continue
        if any(value in have for value in wanted):
            custom += CUSTOM_EXACT_BOOST
        elif WILDCARD in have:
            custom += CUSTOM_WILDCARD_BOOST
    detected = 0.0
    for key, wanted in filters.detected_labels.items():
        if key not in labels.detected_labels:
            continue
        have = labels.detected_labels[key]
        if _same_detected_value(have, wanted):
            detected += DETECTED_EXACT_BOOST
        elif have == WILDCARD:
            detected += DETECTED_WILDCARD_BOOST
    return min(custom, CUSTOM_BOOST_CAP) + min(detected, DETECTED_BOOST_CAP)


def _word_credit(entry: IndexedWorkflow, word: QueryWord) -> float | None:
    """Credit in [0, 1] for one query word; None when the word is neutral context."""
    for dim, have in entry.context_labels:
        if word.lower == have or (have == WILDCARD and word.lower in _CONTEXT_VOCABULARY[dim]):
            return None
    for dim, _ in entry.context_labels:
        if word.lower in _CONTEXT_VOCABULARY[dim]:
            return 0.0  # the workflow's label contradicts the incident's context
    if word.stem in entry.title_terms:
        return TITLE_CREDIT
    if word.stem in entry.description_terms:
        return DESCRIPTION_CREDIT
    if word.parts:
        best = 0.0
        for part in word.parts:
            if part in entry.title_terms:
                best += TITLE_CREDIT
            elif part in entry.description_terms:
                best += DESCRIPTION_CREDIT
        return CAMEL_PART_CREDIT * best / len(word.parts)
    return 0.0


def _coverage(entry: IndexedWorkflow, words: Iterable[QueryWord]) -> tuple[float, int]:
    """Mean credit over the words that count, and how many counted."""
    total = 0.0
    counted = 0
    for word in words:
        credit = _word_credit(entry, word)
        if credit is None:
            continue
        total += credit
        counted += 1
    return (total / counted if counted else 0.0), counted


def text_relevance(
    entry: IndexedWorkflow, words: Sequence[QueryWord], known_signals: frozenset[str]
) -> float:
    """How well the query describes this workflow, in [0, 0.95] (docs/internals.md)."""
    if any(word.lower in entry.signals for word in words):
        others = [word for word in words if word.lower not in entry.signals]
        coverage, counted = _coverage(entry, others)
        return SIGNAL_MATCH_BASE + SIGNAL_MATCH_TEXT_WEIGHT * (coverage if counted else 1.0)
    names_signal = any(word.lower in known_signals for word in words)
    if names_signal and entry.generic:
        # A generic workflow applies to the named signal: the name is no miss.
        words = [word for word in words if word.lower not in known_signals]
    coverage, _ = _coverage(entry, words)
    return (OTHER_SIGNAL_CAP if names_signal else TEXT_ONLY_CAP) * coverage


@dataclass(frozen=True, slots=True)
class _Scored:
    entry: IndexedWorkflow
    raw: float
    confidence: float


Admit = Callable[[Workflow, SearchFilters], bool]


class SearchIndex:
    """An immutable set of indexed workflows that answers `SearchQuery`s.

    `admit` is the hard filter (step 1); a catalog whose labels hold several
    values each (RemediationWorkflow resources) passes its own. `entries` may
    be given already indexed (`index_workflow`), so a catalog that changes
    indexes only the workflows that changed. A hit shows the title, description
    and signal type of `shown[workflow_id]` when given (a catalog that scores
    another view of its workflows), else of the workflow indexed.
    """

    __slots__ = ("_searches", "admit", "entries", "known_signals", "shown")

    def __init__(
        self,
        workflows: Iterable[Workflow | IndexedWorkflow],
        *,
        admit: Admit = passes_filters,
        shown: Mapping[str, Workflow] | None = None,
    ) -> None:
        self.entries: tuple[IndexedWorkflow, ...] = tuple(
            w if isinstance(w, IndexedWorkflow) else index_workflow(w) for w in workflows
        )
        self.known_signals: frozenset[str] = frozenset(
            s for entry in self.entries for s in entry.signals
        )
        self.admit = admit
        self.shown: Mapping[str, Workflow] = shown or {}
        self._searches: OrderedDict[str, SearchResult] = OrderedDict()

    def search(self, query: SearchQuery) -> SearchResult:
        """The answer to `query`, remembered among the last SEARCH_CACHE_SIZE."""
        # The remediation id only travels to Data Storage for its audit trail.
        key = query.model_dump_json(exclude={"remediation_id"})
        result = self._searches.get(key)
        if result is not None:
            self._searches.move_to_end(key)
            return result
        result = self._search(query)
        self._searches[key] = result
        if len(self._searches) > SEARCH_CACHE_SIZE:
            self._searches.popitem(last=False)
        return result

    def _search(self, query: SearchQuery) -> SearchResult:
        """Filter, score, threshold, sort and truncate (docs/internals.md)."""
        words = query_words(query.query)
        filters = query.filters
        scored: list[_Scored] = []
        for entry in self.entries:
            if not self.admit(entry.workflow, filters):
                continue
            relevance = text_relevance(entry, words, self.known_signals)
            if relevance <= 0.0:
                continue  # label boosts alone never make a workflow relevant
            raw = relevance + label_boost(entry.workflow.labels, filters)
            confidence = round(min(1.0, raw), 4)
            if confidence >= query.min_score:
                scored.append(_Scored(entry, round(raw, 4), confidence))
        # Two stable sorts: newest version first, then the primary order.
        scored.sort(key=lambda item: item.entry.sort_version, reverse=True)
        scored.sort(key=lambda item: (-item.confidence, -item.raw, item.entry.workflow.workflow_id))
        hits = tuple(self._hit(item) for item in scored[: query.top_k])
        return SearchResult(workflows=hits, total_results=len(scored))

    def _hit(self, item: _Scored) -> SearchHit:
        workflow = item.entry.workflow
        face = self.shown.get(workflow.workflow_id, workflow)
        return SearchHit(
            workflow_id=workflow.workflow_id,
            version=workflow.version,
            title=face.title,
            description=face.description,
            signal_type=face.signal_type,
            confidence=item.confidence,
            estimated_duration=workflow.estimated_duration,
            success_rate=workflow.success_rate,
            estimated_risk=workflow.estimated_risk,
            parameters=workflow.parameters,
            preconditions=workflow.preconditions,
            invariants=workflow.invariants,
            read_only=workflow.read_only,
            action_type=workflow.action_type,
            detected_labels=dict(workflow.labels.detected_labels),
        )
