"""DataStorageCatalog against a real HTTP server that speaks the contract."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY

from hapi_grpc.adapters.catalog.datastorage import (
    DataStorageCatalog,
    DataStorageHTTPError,
    workflow_path,
)
from hapi_grpc.adapters.circuit_breaker import RateCircuitBreaker
from hapi_grpc.adapters.datastorage.client import DataStorageClient
from hapi_grpc.domain.catalog import (
    SearchFilters,
    SearchQuery,
    WorkflowCatalog,
    WorkflowSchema,
)
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import (
    BudgetExhaustedError,
    CatalogContractError,
    CatalogUnavailableError,
    InvalidRequestError,
    WorkflowNotFoundError,
)

from .conftest import WORKFLOW_ID, FakeDataStorage, search_payload

QUERY = SearchQuery(
    query="OOMKilled critical",
    filters=SearchFilters(
        signal_type="OOMKilled",
        severity="critical",
        custom_labels={"constraint": ("cost-constrained",)},
        detected_labels={"gitOpsManaged": True},
    ),
    top_k=3,
    remediation_id="req-1",
)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


MakeCatalog = Callable[..., DataStorageCatalog]


@pytest.fixture
async def make_catalog(ds: FakeDataStorage) -> AsyncIterator[MakeCatalog]:
    """Catalogs with test-sized timeouts and backoffs, closed afterwards."""
    made: list[DataStorageCatalog] = []

    def make(**overrides: Any) -> DataStorageCatalog:
        options: dict[str, Any] = {
            "request_timeout": 1.0,
            "max_retries": 3,
            "backoff_base": 0.01,
            "backoff_max": 0.02,
        }
        options.update(overrides)
        catalog = DataStorageCatalog(DataStorageClient(options.pop("base_url", ds.url), **options))
        made.append(catalog)
        return catalog

    yield make
    for catalog in made:
        await catalog.close()


# -- success ------------------------------------------------------------------------


async def test_implements_the_port(make_catalog: MakeCatalog) -> None:
    assert isinstance(make_catalog(), WorkflowCatalog)


async def test_search_posts_the_wire_body(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    result = await make_catalog().search(QUERY)

    assert [hit.workflow_id for hit in result.workflows] == [WORKFLOW_ID]
    assert result.workflows[0].confidence == pytest.approx(0.92)
    assert result.total_results == 1
    [seen] = ds.requests
    assert (seen.method, seen.path) == ("POST", "/api/v1/workflows/search")
    assert seen.body == QUERY.to_wire()
    assert seen.body["filters"]["custom_labels"] == {"constraint": ["cost-constrained"]}


async def test_get_schema(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    schema = await make_catalog().get_schema(WORKFLOW_ID)

    assert schema.workflow_id == WORKFLOW_ID
    assert [p.name for p in schema.parameters] == ["MEMORY_LIMIT_NEW", "REPLICAS"]
    assert schema.parameters[1].type == "integer"
    assert [r.path for r in ds.requests] == [f"/api/v1/workflows/{WORKFLOW_ID}/schema"]


async def test_get_workflow(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    workflow = await make_catalog().get_workflow(WORKFLOW_ID)

    assert workflow.version == "1.0.0"
    assert workflow.labels.custom_labels == {"constraint": ("cost-constrained",)}
    assert workflow.estimated_risk == "low"
    assert [r.path for r in ds.requests] == [f"/api/v1/workflows/{WORKFLOW_ID}"]


async def test_schema_without_parameters_is_valid(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("schema", ds.ok({"workflow_id": WORKFLOW_ID, "version": "1"}))
    schema = await make_catalog().get_schema(WORKFLOW_ID)
    assert schema.parameters == ()


# -- not found ------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get_schema", "get_workflow"])
async def test_404_is_not_found_and_not_retried(
    ds: FakeDataStorage, make_catalog: MakeCatalog, method: str
) -> None:
    catalog = make_catalog()
    with pytest.raises(WorkflowNotFoundError) as info:
        await getattr(catalog, method)("no-such-workflow")
    assert info.value.workflow_id == "no-such-workflow"
    assert ds.count() == 1


async def test_404_does_not_count_as_a_breaker_failure(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    breaker = RateCircuitBreaker(min_calls=2)
    catalog = make_catalog(breaker=breaker)
    for _ in range(5):
        with pytest.raises(WorkflowNotFoundError):
            await catalog.get_schema("unknown-workflow")
    assert breaker.state == "closed"
    assert breaker.window_counts() == (5, 0)


# -- retries ---------------------------------------------------------------------------


async def test_500_then_success_is_retried(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    retries = sample("hapi_datastorage_retries_total", endpoint="search")
    errors = sample("hapi_datastorage_requests_total", endpoint="search", status="5xx")
    ds.script("search", ds.status(500, title="Internal Server Error"))

    result = await make_catalog().search(QUERY)

    assert result.total_results == 1
    assert ds.count("search") == 2
    assert sample("hapi_datastorage_retries_total", endpoint="search") == retries + 1
    assert sample("hapi_datastorage_requests_total", endpoint="search", status="5xx") == errors + 1


async def test_retries_are_logged_without_bodies(
    ds: FakeDataStorage, make_catalog: MakeCatalog, caplog: pytest.LogCaptureFixture
) -> None:
    ds.script("schema", ds.status(503, detail="SECRET-DETAIL " * 50))
    with caplog.at_level(logging.INFO, logger="hapi_grpc.adapters.datastorage.client"):
        await make_catalog().get_schema(WORKFLOW_ID)
    [record] = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert "schema" in record.getMessage()
    assert "attempt 1 of 4" in record.getMessage()
    assert "HTTP 503" in record.getMessage()
    assert "SECRET-DETAIL" not in caplog.text


async def test_429_retry_after_is_honoured(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    ds.script("search", ds.status(429, title="Too Many Requests", headers={"Retry-After": "1"}))

    await make_catalog().search(QUERY)

    first, second = ds.requests
    assert 0.95 <= second.at - first.at < 3.0


async def test_retry_after_beyond_the_budget_gives_up_at_once(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("search", ds.status(503, headers={"Retry-After": "5"}))
    started = time.monotonic()
    with budget_scope(Budget.from_timeout(2.0)), pytest.raises(CatalogUnavailableError) as info:
        await make_catalog().search(QUERY)
    assert time.monotonic() - started < 0.5
    assert ds.count() == 1
    assert "HTTP 503" in str(info.value)
    assert "deadline" in str(info.value)


async def test_retries_are_bounded_by_max_retries(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("search", *[ds.status(502) for _ in range(10)])
    with pytest.raises(CatalogUnavailableError) as info:
        await make_catalog(max_retries=2).search(QUERY)
    assert ds.count() == 3
    message = str(info.value)
    assert "search (POST /api/v1/workflows/search)" in message
    assert "after 3 attempt(s)" in message
    assert "HTTP 502" in message


async def test_slow_responses_time_out_and_are_retried(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    timeouts = sample("hapi_datastorage_requests_total", endpoint="schema", status="timeout")
    ds.script("schema", *[ds.slow(3.0) for _ in range(3)])
    started = time.monotonic()
    with pytest.raises(CatalogUnavailableError) as info:
        await make_catalog(request_timeout=0.2, max_retries=2).get_schema(WORKFLOW_ID)
    assert time.monotonic() - started < 1.5
    assert ds.count() == 3
    assert "timed out after 0.2s" in str(info.value)
    assert (
        sample("hapi_datastorage_requests_total", endpoint="schema", status="timeout")
        == timeouts + 3
    )


async def test_slow_then_fast_succeeds(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    ds.script("search", ds.slow(3.0))
    result = await make_catalog(request_timeout=0.2).search(QUERY)
    assert result.total_results == 1
    assert ds.count() == 2


async def test_dropped_connection_is_retried(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("search", ds.drop(), ds.drop())
    result = await make_catalog().search(QUERY)
    assert result.total_results == 1
    assert ds.count() == 3


async def test_connection_dropped_every_time_is_unavailable(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("search", *[ds.drop() for _ in range(4)])
    with pytest.raises(CatalogUnavailableError) as info:
        await make_catalog().search(QUERY)
    assert "connection error (ServerDisconnectedError)" in str(info.value)
    assert ds.count() == 4


async def test_truncated_body_is_retried(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    errors = sample("hapi_datastorage_requests_total", endpoint="search", status="connection_error")
    ds.script("search", ds.truncated())
    result = await make_catalog().search(QUERY)
    assert result.total_results == 1
    assert ds.count() == 2
    assert (
        sample("hapi_datastorage_requests_total", endpoint="search", status="connection_error")
        == errors + 1
    )


async def test_connection_refused_is_unavailable(make_catalog: MakeCatalog) -> None:
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    catalog = make_catalog(base_url=f"http://127.0.0.1:{port}", max_retries=1)
    with pytest.raises(CatalogUnavailableError) as info:
        await catalog.search(QUERY)
    assert "after 2 attempt(s): connection error" in str(info.value)


# -- non-retryable errors ------------------------------------------------------------------


async def test_400_is_not_retried_and_carries_the_problem(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("search", ds.status(400, title="Bad Request", detail="top_k must be at most 10"))
    with pytest.raises(DataStorageHTTPError) as info:
        await make_catalog().search(QUERY)
    assert ds.count() == 1
    assert info.value.status == 400
    assert isinstance(info.value, CatalogUnavailableError)
    assert str(info.value) == (
        "Data Storage search (POST /api/v1/workflows/search) answered HTTP 400: "
        "Bad Request: top_k must be at most 10"
    )


async def test_problem_text_is_truncated_and_cleaned(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("search", ds.status(422, title="Bad\nInput", detail="x" * 10_000))
    with pytest.raises(DataStorageHTTPError) as info:
        await make_catalog().search(QUERY)
    assert info.value.title == "Bad Input"
    assert len(info.value.detail) == 200
    assert info.value.detail.endswith("...")
    assert len(str(info.value)) < 400


async def test_4xx_without_a_problem_body(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    ds.script("workflow", ds.status(403, body=b"<html>forbidden</html>"))
    with pytest.raises(DataStorageHTTPError) as info:
        await make_catalog().get_workflow(WORKFLOW_ID)
    assert str(info.value).endswith("answered HTTP 403")
    assert ds.count() == 1


async def test_redirects_are_not_followed(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    redirects = sample("hapi_datastorage_requests_total", endpoint="search", status="3xx")
    ds.script("search", ds.status(302, headers={"Location": "http://127.0.0.1:1/elsewhere"}))
    with pytest.raises(DataStorageHTTPError) as info:
        await make_catalog().search(QUERY)
    assert info.value.status == 302
    assert ds.count() == 1
    assert (
        sample("hapi_datastorage_requests_total", endpoint="search", status="3xx") == redirects + 1
    )


# -- contract violations ----------------------------------------------------------------------


async def test_non_json_body_is_a_contract_error(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    before = sample("hapi_datastorage_requests_total", endpoint="search", status="contract_error")
    ds.script("search", ds.raw(b"<html>gateway login</html>"))
    with pytest.raises(CatalogContractError) as info:
        await make_catalog().search(QUERY)
    assert str(info.value) == (
        "search response: body is not valid JSON (Expecting value at char 0)"
    )
    assert ds.count() == 1
    assert (
        sample("hapi_datastorage_requests_total", endpoint="search", status="contract_error")
        == before + 1
    )


async def test_wrong_content_type_is_a_contract_error(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("search", ds.raw(b"<html></html>", content_type="text/html; charset=utf-8"))
    with pytest.raises(CatalogContractError, match="content type 'text/html' is not JSON"):
        await make_catalog().search(QUERY)


async def test_json_that_is_not_an_object(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    ds.script("search", ds.ok([1, 2, 3]))
    with pytest.raises(CatalogContractError, match="expected a JSON object, got list"):
        await make_catalog().search(QUERY)


async def test_missing_fields_are_named(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    ds.script("schema", ds.ok({"version": "1.0.0", "parameters": [{"type": "string"}]}))
    with pytest.raises(CatalogContractError) as info:
        await make_catalog().get_schema(WORKFLOW_ID)
    assert str(info.value) == (
        "schema response: workflow_id: Field required; parameters.0.name: Field required"
    )


async def test_wrong_types_are_named(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    payload = search_payload()
    payload["workflows"][0]["confidence"] = "high"
    ds.script("search", ds.ok(payload))
    with pytest.raises(CatalogContractError) as info:
        await make_catalog().search(QUERY)
    assert str(info.value).startswith(
        "search response: workflows.0.confidence: Input should be a valid number"
    )
    assert "high" not in str(info.value)  # inputs are not echoed


async def test_many_problems_are_summarised(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    ds.script("search", ds.ok({"workflows": [{} for _ in range(5)]}))
    with pytest.raises(CatalogContractError) as info:
        await make_catalog().search(QUERY)
    assert str(info.value).endswith("more problem(s)")
    assert len(str(info.value)) < 300


async def test_schema_of_another_workflow_is_a_contract_error(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.script("schema", ds.ok({"workflow_id": "someone-else", "parameters": []}))
    with pytest.raises(CatalogContractError, match="'someone-else' does not match"):
        await make_catalog().get_schema(WORKFLOW_ID)


async def test_truncated_json_without_length_is_a_contract_error(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    body = json.dumps(search_payload()).encode()[:40]
    ds.script("search", ds.raw(body))
    with pytest.raises(CatalogContractError, match="body is not valid JSON"):
        await make_catalog().search(QUERY)


# -- workflow ids in URLs ---------------------------------------------------------------------

BAD_IDS = ["../../admin", "a?b", "a#b", "a/b", "", "..", "a..b", " x", "%2e%2e", "-x", "x" * 129]


@pytest.mark.parametrize("workflow_id", BAD_IDS)
async def test_unsafe_ids_are_refused_before_any_request(
    ds: FakeDataStorage, make_catalog: MakeCatalog, workflow_id: str
) -> None:
    catalog = make_catalog()
    for method in (catalog.get_schema, catalog.get_workflow):
        with pytest.raises(InvalidRequestError) as info:
            await method(workflow_id)
        assert [v.field for v in info.value.violations] == ["workflow_id"]
    assert ds.requests == []


def test_workflow_path_encodes_one_segment() -> None:
    assert workflow_path("a?b", "/schema") == "/api/v1/workflows/a%3Fb/schema"
    assert workflow_path("a#b") == "/api/v1/workflows/a%23b"
    assert workflow_path("../../admin") == "/api/v1/workflows/..%2F..%2Fadmin"
    assert workflow_path("wf-1.2_x") == "/api/v1/workflows/wf-1.2_x"


async def test_encoded_segment_reaches_the_server_unchanged(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    # Validation normally stops such ids; this checks the second line of
    # defence on the wire: the client must not decode or normalise the path.
    catalog = make_catalog()
    with pytest.raises(WorkflowNotFoundError):
        await catalog.client.workflow_part("schema", "../../admin", WorkflowSchema)
    assert [r.path for r in ds.requests] == ["/api/v1/workflows/..%2F..%2Fadmin/schema"]
    assert [r.endpoint for r in ds.requests] == ["schema"]


async def test_valid_ids_with_dots_reach_the_right_path(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    ds.workflows["scale.v2_beta-1"] = {
        **ds.workflows[WORKFLOW_ID],
        "workflow_id": "scale.v2_beta-1",
    }
    await make_catalog().get_schema("scale.v2_beta-1")
    assert [r.path for r in ds.requests] == ["/api/v1/workflows/scale.v2_beta-1/schema"]


# -- deadlines and cancellation --------------------------------------------------------------


async def test_budget_bounds_a_slow_server(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    ds.script("search", ds.slow(5.0))
    started = time.monotonic()
    with budget_scope(Budget.from_timeout(0.3)), pytest.raises(BudgetExhaustedError):
        await make_catalog(request_timeout=2.0).search(QUERY)
    assert time.monotonic() - started < 0.3 + 0.4
    assert ds.count() == 1


async def test_spent_budget_sends_nothing(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    with budget_scope(Budget.from_timeout(0.0)), pytest.raises(BudgetExhaustedError):
        await make_catalog().get_workflow(WORKFLOW_ID)
    assert ds.requests == []


async def test_cancellation_aborts_the_request_and_is_not_a_failure(
    ds: FakeDataStorage, make_catalog: MakeCatalog
) -> None:
    breaker = RateCircuitBreaker(min_calls=1)
    # Timeouts far beyond the test, so only the cancellation can end the request.
    catalog = make_catalog(breaker=breaker, request_timeout=30.0)
    ds.script("search", ds.slow(20.0))
    task = asyncio.create_task(catalog.search(QUERY))
    for _ in range(200):  # wait until the request is in the server's hands
        if ds.count():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(ds.aborted_event.wait(), 1.0)
    assert [r.endpoint for r in ds.aborted] == ["search"]
    assert breaker.window_counts() == (0, 0)
    assert breaker.state == "closed"


# -- misc ------------------------------------------------------------------------------------------


async def test_closed_client_refuses_calls(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    catalog = make_catalog()
    await catalog.search(QUERY)
    await catalog.close()
    with pytest.raises(CatalogUnavailableError, match="closed"):
        await catalog.search(QUERY)
    assert ds.count() == 1


async def test_credentials_in_the_base_url_never_leak(
    ds: FakeDataStorage, make_catalog: MakeCatalog, caplog: pytest.LogCaptureFixture
) -> None:
    secret_url = ds.url.replace("http://", "http://svc:s3cr3t-token@")
    catalog = make_catalog(base_url=secret_url, max_retries=1)
    ds.script("search", ds.status(500), ds.status(500))
    with caplog.at_level(logging.DEBUG), pytest.raises(CatalogUnavailableError) as info:
        await catalog.search(QUERY)
    assert "s3cr3t" not in str(info.value)
    assert "s3cr3t" not in caplog.text


def test_rejects_a_base_url_that_is_not_http() -> None:
    with pytest.raises(ValueError):
        DataStorageClient("ftp://127.0.0.1/")
    with pytest.raises(ValueError):
        DataStorageClient("/relative/only")


async def test_one_session_is_reused(ds: FakeDataStorage, make_catalog: MakeCatalog) -> None:
    catalog = make_catalog()
    await catalog.search(QUERY)
    session = catalog.client.http.transport._session  # type: ignore[attr-defined]
    await catalog.get_schema(WORKFLOW_ID)
    assert catalog.client.http.transport._session is session  # type: ignore[attr-defined]
