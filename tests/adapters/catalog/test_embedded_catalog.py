"""The embedded catalog: search semantics, lookups, versions and immutability."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog
from hapi_grpc.adapters.catalog.loader import CatalogFileError
from hapi_grpc.adapters.catalog.scoring import (
    SearchIndex,
    camel_parts,
    query_words,
    stem,
    version_key,
)
from hapi_grpc.domain.catalog import (
    SearchFilters,
    SearchQuery,
    Workflow,
    WorkflowCatalog,
)
from hapi_grpc.domain.errors import WorkflowNotFoundError


@pytest.fixture(scope="module")
def bundled() -> EmbeddedCatalog:
    return EmbeddedCatalog.from_file(None)


def _wf(workflow_id: str, signal: str = "OOMKilled", **fields: Any) -> Workflow:
    labels = {"signal_type": signal, **fields.pop("labels", {})}
    data: dict[str, Any] = {
        "workflow_id": workflow_id,
        "version": "1.0.0",
        "title": "Increase memory limit",
        "description": "Raise the container memory limit",
        "signal_type": signal,
        "labels": labels,
    }
    data.update(fields)
    return Workflow.model_validate(data)


def _search(catalog: EmbeddedCatalog, query: str, **kwargs: Any) -> list[tuple[str, float]]:
    filters = kwargs.pop("filters", None)
    if filters is not None:
        kwargs["filters"] = SearchFilters.model_validate(filters)
    result = catalog.search_sync(SearchQuery(query=query, **kwargs))
    return [(hit.workflow_id, hit.confidence) for hit in result.workflows]


# --------------------------------------------------------------- bundled catalog


def test_embedded_catalog_implements_the_port(bundled: EmbeddedCatalog) -> None:
    assert isinstance(bundled, WorkflowCatalog)
    assert len(bundled) >= 15


async def test_oomkilled_critical_finds_increase_memory_first(bundled: EmbeddedCatalog) -> None:
    result = await bundled.search(SearchQuery(query="OOMKilled critical"))
    top = result.workflows[0]
    assert top.workflow_id == "oomkill-increase-memory-v1"
    assert top.confidence >= 0.9
    assert top.signal_type == "OOMKilled"
    assert top.parameters is not None
    assert "MEMORY_LIMIT_NEW" in {p.name for p in top.parameters}
    assert {hit.signal_type for hit in result.workflows} == {"OOMKilled"}
    assert result.total_results == len(result.workflows)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("CrashLoopBackOff high", "crashloop-config-fix-restart-v1"),
        ("NodeNotReady critical", "node-drain-reboot-v1"),
        ("ImagePullBackOff warning", "imagepull-fix-credentials-v1"),
        ("CertificateNotReady critical", "fix-certificate-gitops-v1"),
        ("NodeDiskPressure critical", "node-disk-pressure-cleanup-v1"),
        ("HPAMaxedOut warning", "adjust-hpa-limits-v1"),
        ("HighCPUThrottling warning", "increase-cpu-limit-v1"),
        ("KubePersistentVolumeFillingUp critical", "expand-pvc-v1"),
        ("KubePodNotReady warning", "restart-pod-v1"),
        ("crashloopbackoff", "crashloop-config-fix-restart-v1"),
    ],
)
def test_exact_signal_type_ranks_first_with_high_confidence(
    bundled: EmbeddedCatalog, query: str, expected: str
) -> None:
    hits = _search(bundled, query, min_score=0.0, top_k=10)
    assert hits[0][0] == expected
    assert hits[0][1] >= 0.85
    signal = query.split()[0].lower()
    for workflow_id, confidence in hits:
        workflow = bundled_workflow(bundled, workflow_id)
        if workflow.signal_type.lower() != signal:
            assert confidence < 0.70, workflow_id


def bundled_workflow(catalog: EmbeddedCatalog, workflow_id: str) -> Workflow:
    return next(w for w in catalog.workflows if w.workflow_id == workflow_id)


def test_keywords_after_the_signal_refine_the_order(bundled: EmbeddedCatalog) -> None:
    hits = _search(bundled, "CrashLoopBackOff critical liveness probe failing")
    assert hits[0][0] == "tune-liveness-probe-v1"
    assert hits[0][1] > hits[1][1] >= 0.85


@pytest.mark.parametrize("query", ["banana bread", "critical", "the of and", "P0 production"])
def test_unrelated_or_context_only_query_finds_nothing(
    bundled: EmbeddedCatalog, query: str
) -> None:
    result = bundled.search_sync(SearchQuery(query=query))
    assert result.workflows == ()
    assert result.total_results == 0


def test_text_without_signal_type_can_still_match(bundled: EmbeddedCatalog) -> None:
    hits = _search(bundled, "collect diagnostics snapshot")
    assert hits[0][0] == "collect-cluster-diagnostics-v1"
    assert 0.70 <= hits[0][1] <= 0.80


def test_generic_workflow_applies_to_any_signal_but_stays_below_threshold(
    bundled: EmbeddedCatalog,
) -> None:
    query = "OOMKilled collect diagnostics"
    hits = dict(_search(bundled, query, filters={"signal_type": "OOMKilled"}, min_score=0))
    # The signal name is no miss for a '*' workflow, yet a named signal caps it at 0.45.
    assert hits["collect-cluster-diagnostics-v1"] == 0.45
    assert hits["oomkill-increase-memory-v1"] >= 0.85


def test_hits_carry_parameters_and_rounded_confidence(bundled: EmbeddedCatalog) -> None:
    result = bundled.search_sync(
        SearchQuery(query="OOMKilled critical memory leak java heap", min_score=0.0, top_k=10)
    )
    assert result.workflows
    for hit in result.workflows:
        assert hit.parameters is not None
        assert round(hit.confidence, 4) == hit.confidence
        assert 0.0 <= hit.confidence <= 1.0
    confidences = [hit.confidence for hit in result.workflows]
    assert confidences == sorted(confidences, reverse=True)


# ----------------------------------------------------------------- label filters


def test_hard_filter_excludes_non_matching_labels(bundled: EmbeddedCatalog) -> None:
    hits = _search(
        bundled, "OOMKilled critical", filters={"signal_type": "CrashLoopBackOff"}, min_score=0
    )
    assert hits
    assert all(not workflow_id.startswith("oomkill") for workflow_id, _ in hits)


def test_wildcard_labels_match_any_filter_value() -> None:
    catalog = EmbeddedCatalog(
        [
            _wf("any-severity-v1"),
            _wf("critical-only-v1", labels={"severity": "critical"}),
            _wf("low-only-v1", labels={"severity": "low"}),
        ]
    )
    hits = _search(catalog, "OOMKilled", filters={"severity": "CRITICAL"})
    assert [h[0] for h in hits] == ["any-severity-v1", "critical-only-v1"]
    assert [h[0] for h in _search(catalog, "OOMKilled")] == [
        "any-severity-v1",
        "critical-only-v1",
        "low-only-v1",
    ]
    # A '*' or empty filter value does not filter either.
    assert len(_search(catalog, "OOMKilled", filters={"severity": "*"})) == 3
    assert len(_search(catalog, "OOMKilled", filters={"severity": ""})) == 3


@pytest.mark.parametrize("field", ["signal_type", "component", "environment", "priority"])
def test_every_label_filter_is_hard(field: str) -> None:
    if field == "signal_type":
        generic, specific = _wf("generic-v1", signal="*"), _wf("specific-v1", signal="Alpha")
    else:
        generic = _wf("generic-v1", labels={field: "*"})
        specific = _wf("specific-v1", labels={field: "alpha"})
    catalog = EmbeddedCatalog([generic, specific])
    assert [h[0] for h in _search(catalog, "memory limit", filters={field: "beta"})] == [
        "generic-v1"
    ]
    assert [h[0] for h in _search(catalog, "memory limit", filters={field: "ALPHA"})] == [
        "generic-v1",
        "specific-v1",
    ]


def test_contradicting_severity_in_query_lowers_the_score() -> None:
    catalog = EmbeddedCatalog([_wf("any-v1"), _wf("low-v1", labels={"severity": "low"})])
    hits = dict(_search(catalog, "OOMKilled critical memory", min_score=0))
    assert hits["any-v1"] > hits["low-v1"] >= 0.85


# ---------------------------------------------------------------- label boosts


def test_custom_label_boost_reorders_two_otherwise_equal_workflows() -> None:
    catalog = EmbeddedCatalog(
        [
            _wf("a-plain-v1"),
            _wf("b-cost-v1", labels={"custom_labels": {"constraint": ["cost-constrained"]}}),
            _wf("c-wild-v1", labels={"custom_labels": {"constraint": ["*"]}}),
        ]
    )
    plain = _search(catalog, "memory limit")
    assert plain == [("a-plain-v1", 0.8), ("b-cost-v1", 0.8), ("c-wild-v1", 0.8)]

    boosted = _search(
        catalog,
        "memory limit",
        filters={"custom_labels": {"constraint": ["cost-constrained"], "team": ["x"]}},
    )
    assert boosted == [("b-cost-v1", 0.95), ("c-wild-v1", 0.875), ("a-plain-v1", 0.8)]


def test_custom_boost_is_capped() -> None:
    labels = {"custom_labels": {"constraint": ["cost-constrained"], "team": ["payments"]}}
    catalog = EmbeddedCatalog([_wf("two-keys-v1", labels=labels)])
    filters = {"custom_labels": {"constraint": ["cost-constrained"], "team": ["payments"]}}
    assert _search(catalog, "memory limit", filters=filters) == [("two-keys-v1", 0.95)]


def test_boost_order_survives_the_confidence_cap() -> None:
    catalog = EmbeddedCatalog(
        [
            _wf("a-wild-v1", labels={"custom_labels": {"constraint": ["*"]}}),
            _wf("b-exact-v1", labels={"custom_labels": {"constraint": ["cost-constrained"]}}),
        ]
    )
    hits = _search(
        catalog, "OOMKilled", filters={"custom_labels": {"constraint": ["cost-constrained"]}}
    )
    assert hits == [("b-exact-v1", 1.0), ("a-wild-v1", 1.0)]


def test_detected_labels_boost_less_than_custom_labels(bundled: EmbeddedCatalog) -> None:
    gitops = _search(
        bundled, "CertificateNotReady", filters={"detected_labels": {"gitOpsManaged": True}}
    )
    plain = _search(
        bundled, "CertificateNotReady", filters={"detected_labels": {"gitOpsManaged": False}}
    )
    assert gitops[0][0] == "fix-certificate-gitops-v1"
    assert plain[0][0] == "renew-certificate-v1"
    assert gitops[0][1] == plain[0][1] == 1.0

    catalog = EmbeddedCatalog(
        [_wf("a-v1"), _wf("b-v1", labels={"detected_labels": {"gitOpsManaged": True}})]
    )
    hits = _search(catalog, "memory limit", filters={"detected_labels": {"gitOpsManaged": True}})
    assert hits == [("b-v1", 0.85), ("a-v1", 0.8)]
    # A boolean label is not matched by a number.
    hits = _search(catalog, "memory limit", filters={"detected_labels": {"gitOpsManaged": 1}})
    assert hits == [("a-v1", 0.8), ("b-v1", 0.8)]


def test_boosts_alone_never_make_an_unrelated_workflow_relevant() -> None:
    catalog = EmbeddedCatalog(
        [_wf("cost-v1", labels={"custom_labels": {"constraint": ["cost-constrained"]}})]
    )
    filters = {"custom_labels": {"constraint": ["cost-constrained"]}}
    assert _search(catalog, "banana bread", filters=filters, min_score=0) == []
    # Naming another signal type keeps it below the default threshold even boosted.
    other = EmbeddedCatalog([*catalog.workflows, _wf("crash-v1", signal="CrashLoopBackOff")])
    query = "CrashLoopBackOff increase memory limit container"
    hits = dict(_search(other, query, filters=filters, min_score=0))
    assert hits["crash-v1"] >= 0.85
    assert hits["cost-v1"] < 0.70


# --------------------------------------------------- threshold, top_k and order


def test_min_score_and_top_k_are_honoured() -> None:
    catalog = EmbeddedCatalog([_wf(f"oom-{i}-v1") for i in range(12)])
    result = catalog.search_sync(SearchQuery(query="OOMKilled"))
    assert len(result.workflows) == 5
    assert result.total_results == 12
    result = catalog.search_sync(SearchQuery(query="OOMKilled", top_k=10))
    assert len(result.workflows) == 10
    result = catalog.search_sync(SearchQuery(query="OOMKilled", top_k=1))
    assert [h.workflow_id for h in result.workflows] == ["oom-0-v1"]
    assert result.total_results == 12
    assert catalog.search_sync(SearchQuery(query="OOMKilled", min_score=0.9501)).total_results == 0
    assert catalog.search_sync(SearchQuery(query="OOMKilled", min_score=0.95)).total_results == 12


def test_tie_order_is_deterministic_whatever_the_catalog_order() -> None:
    workflows = [_wf(f"oom-{chr(97 + i)}-v1") for i in range(8)]
    expected = sorted(w.workflow_id for w in workflows)
    rng = random.Random(7)
    for _ in range(5):
        rng.shuffle(workflows)
        catalog = EmbeddedCatalog(workflows)
        hits = _search(catalog, "OOMKilled", top_k=10)
        assert [h[0] for h in hits] == expected


def test_index_with_several_versions_lists_the_newest_first() -> None:
    index = SearchIndex([_wf("multi", version=v) for v in ("1.9.0", "1.10.0", "1.2")])
    hits = index.search(SearchQuery(query="OOMKilled")).workflows
    assert [h.version for h in hits] == ["1.10.0", "1.9.0", "1.2"]


# ------------------------------------------------------------------- lookups


async def test_get_schema_and_workflow(bundled: EmbeddedCatalog) -> None:
    schema = await bundled.get_schema("oomkill-increase-memory-v1")
    assert schema.workflow_id == "oomkill-increase-memory-v1"
    assert schema.version == "1.0.0"
    assert [p.name for p in schema.parameters][-1] == "MEMORY_LIMIT_NEW"
    workflow = await bundled.get_workflow("fix-certificate-gitops-v1")
    assert workflow.signal_type == "CertificateNotReady"
    assert workflow.labels.detected_labels["gitOpsManaged"] is True


async def test_workflow_without_parameters_has_an_empty_schema(bundled: EmbeddedCatalog) -> None:
    schema = await bundled.get_schema("collect-cluster-diagnostics-v1")
    assert schema.parameters == ()
    assert (await bundled.get_schema("cleanup-evicted-pods-v1")).parameters == ()


@pytest.mark.parametrize("workflow_id", ["no-such-workflow", "", "../etc/passwd"])
async def test_unknown_ids_raise_not_found(bundled: EmbeddedCatalog, workflow_id: str) -> None:
    with pytest.raises(WorkflowNotFoundError) as caught:
        await bundled.get_schema(workflow_id)
    assert caught.value.workflow_id == workflow_id
    with pytest.raises(WorkflowNotFoundError):
        await bundled.get_workflow(workflow_id)


async def test_highest_version_wins() -> None:
    catalog = EmbeddedCatalog(
        [
            _wf("multi-v", version="1.9.0", title="old"),
            _wf("multi-v", version="1.10.0", title="new"),
            _wf("multi-v", version="2.0.0-rc1", title="pre"),
            _wf("multi-v", version="1.2", title="older"),
        ]
    )
    assert len(catalog) == 1
    assert (await catalog.get_workflow("multi-v")).title == "pre"
    assert (await catalog.get_schema("multi-v")).version == "2.0.0-rc1"
    catalog = EmbeddedCatalog([_wf("multi-v", version=v) for v in ("1.10.0", "1.9.0", "v1.2")])
    assert (await catalog.get_workflow("multi-v")).version == "1.10.0"
    hits = catalog.search_sync(SearchQuery(query="OOMKilled")).workflows
    assert [(h.workflow_id, h.version) for h in hits] == [("multi-v", "1.10.0")]


async def test_returned_models_cannot_change_the_catalog() -> None:
    catalog = EmbeddedCatalog(
        [_wf("cost-v1", labels={"custom_labels": {"constraint": ["cost-constrained"]}})]
    )
    workflow = await catalog.get_workflow("cost-v1")
    with pytest.raises(pydantic.ValidationError):
        workflow.title = "changed"  # type: ignore[misc]
    workflow.labels.custom_labels["constraint"] = ("other",)
    again = await catalog.get_workflow("cost-v1")
    assert again.labels.custom_labels == {"constraint": ("cost-constrained",)}
    schema = await catalog.get_schema("cost-v1")
    with pytest.raises(pydantic.ValidationError):
        schema.parameters = ()  # type: ignore[misc]
    hit = catalog.search_sync(SearchQuery(query="OOMKilled")).workflows[0]
    with pytest.raises(pydantic.ValidationError):
        hit.confidence = 0.1  # type: ignore[misc]


def test_constructor_rejects_an_inconsistent_catalog() -> None:
    with pytest.raises(ValueError, match=r"entry #1 \(dup-v1\): duplicate of entry #0"):
        EmbeddedCatalog([_wf("dup-v1"), _wf("dup-v1")])
    with pytest.raises(ValueError, match="not a safe identifier"):
        EmbeddedCatalog([_wf("a/b")])


def test_from_file_loads_a_catalog_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump([_wf("mine-v1").model_dump(mode="json")]), encoding="utf-8")
    catalog = EmbeddedCatalog.from_file(path)
    assert [w.workflow_id for w in catalog.workflows] == ["mine-v1"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("workflows: []\n", encoding="utf-8")
    with pytest.raises(CatalogFileError, match="catalog is empty"):
        EmbeddedCatalog.from_file(str(bad))


async def test_search_and_search_sync_agree(bundled: EmbeddedCatalog) -> None:
    query = SearchQuery(query="NodeNotReady critical", min_score=0.1, top_k=10)
    assert await bundled.search(query) == bundled.search_sync(query)
    await bundled.close()
    assert bundled.search_sync(query).workflows  # close releases nothing


def test_repeated_searches_are_answered_from_memory_with_the_same_result() -> None:
    catalog = EmbeddedCatalog.from_file(None)
    query = SearchQuery(query="OOMKilled critical memory", remediation_id="rr-1")
    first = catalog.search_sync(query)
    # Another investigation asking the same question gets the same answer,
    # without scoring the catalog again.
    again = catalog.search_sync(query.model_copy(update={"remediation_id": "rr-2"}))
    assert again is first
    assert again == SearchIndex(catalog._latest.values()).search(query)
    # Anything that changes the answer is a different question.
    narrowed = catalog.search_sync(
        query.model_copy(update={"filters": SearchFilters(severity="low")})
    )
    assert narrowed is not first
    assert (
        catalog.search_sync(query.model_copy(update={"top_k": 1})).workflows
        == (first.workflows[:1])
    )


def test_remembered_searches_are_bounded() -> None:
    from hapi_grpc.adapters.catalog.scoring import SEARCH_CACHE_SIZE

    catalog = EmbeddedCatalog.from_file(None)
    for i in range(SEARCH_CACHE_SIZE + 50):
        catalog.search_sync(SearchQuery(query=f"OOMKilled {i}"))
    assert len(catalog._index._searches) == SEARCH_CACHE_SIZE


# ------------------------------------------------------------------- helpers


def test_tokenisation_keeps_whole_camel_case_words_and_their_parts() -> None:
    assert camel_parts("OOMKilled") == ["oom", "killed"]
    assert camel_parts("CrashLoopBackOff") == ["crash", "loop", "back", "off"]
    assert camel_parts("node") == ["node"]
    [word] = query_words("OOMKilled")
    assert word.lower == "oomkilled"
    assert word.parts == ("oom", "kill")
    assert [w.lower for w in query_words("the pods of the Node")] == ["pods", "node"]
    assert stem("restarting") == stem("restarts") == stem("restart")
    assert stem("throttled") == stem("throttling") == stem("throttle")


def test_version_key_orders_versions() -> None:
    ordered = ["1.0.0-rc1", "1.0.0", "1.2", "1.9.0", "1.10.0", "2"]
    shuffled = list(reversed(ordered))
    assert sorted(shuffled, key=version_key) == ordered
    assert version_key("v1.0") == version_key("1.0.0") == version_key("1")
    assert version_key("1.²") < version_key("1.0.1")  # non-ASCII digits are text
