"""`HttpClient` over `MockTransport`: what every HTTP adapter gets from the one client
(the budget-clipped timeout, retries, bearer token files, errors that name the remote
and never its URL)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hapi_grpc.adapters.http.client import HttpClient, HttpUnavailable
from hapi_grpc.adapters.http.retry import RetryPolicy, TransientError
from hapi_grpc.adapters.http.transport import MockTransport, Request, Response, TransportError
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError


def _client(transport: MockTransport, **kwargs: object) -> HttpClient:
    return HttpClient(
        "http://source.test/api", name="Source", timeout=5.0, transport=transport, **kwargs
    )  # type: ignore[arg-type]


def _ok(request: Request) -> Response:
    return Response(200, b'{"ok": true}', {"Content-Type": "application/json"})


async def test_a_path_and_parameters_are_sent_under_the_base_url() -> None:
    transport = MockTransport(_ok)
    response = await _client(transport).send("GET", "/v1/x", params=[("q", "a b")])
    assert response.json() == {"ok": True}
    (sent,) = transport.requests
    assert str(sent.url) == "http://source.test/api/v1/x?q=a+b"


async def test_a_transient_answer_is_retried_then_read() -> None:
    answers = iter([Response(503, b"busy", {}), Response(200, b"7", {})])
    transport = MockTransport(lambda request: next(answers))

    def read(response: Response) -> int:
        if response.status >= 500:
            raise TransientError(f"HTTP {response.status}")
        return int(response.body)

    client = _client(transport, retry=RetryPolicy(attempt_timeout=1.0, backoff_base=0.01))
    assert await client.call("GET", "/n", read, what="n", fail=RuntimeError) == 7
    assert len(transport.requests) == 2


async def test_retries_stop_at_the_policy_and_fail_with_the_adapters_error() -> None:
    transport = MockTransport(lambda request: Response(503, b"busy", {}))

    def read(response: Response) -> None:
        raise TransientError(f"HTTP {response.status}")

    policy = RetryPolicy(attempt_timeout=1.0, max_retries=2, backoff_base=0.01)
    with pytest.raises(RuntimeError):
        await _client(transport, retry=policy).call("GET", "/n", read, what="n", fail=RuntimeError)
    assert len(transport.requests) == 3


async def test_the_timeout_is_clipped_to_the_callers_budget() -> None:
    async def slow(request: Request) -> Response:
        await asyncio.sleep(5)
        return _ok(request)

    client = _client(MockTransport(slow))
    loop = asyncio.get_running_loop()
    started = loop.time()
    with budget_scope(Budget.from_timeout(0.3)), pytest.raises(TimeoutError):
        await client.send("GET", "/slow")
    assert loop.time() - started < 1.0
    with budget_scope(Budget.from_timeout(0.0)), pytest.raises(BudgetExhaustedError):
        await client.send("GET", "/slow")


async def test_the_bearer_token_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("tok-4d1e9a0b\n")
    transport = MockTransport(_ok)
    client = _client(transport, token_file=str(token))
    await client.send("GET", "/a")
    token.write_text("tok-8b2c6f31-rotated\n")
    await client.send("GET", "/b")
    seen = [r.headers["Authorization"] for r in transport.requests]
    assert seen == ["Bearer tok-4d1e9a0b", "Bearer tok-8b2c6f31-rotated"]
    token.write_text("")
    with pytest.raises(HttpUnavailable, match="Source: the bearer token file is empty"):
        await client.send("GET", "/c")


async def test_a_failed_connection_names_the_remote_never_its_url() -> None:
    def refused(request: Request) -> Response:
        raise TransportError("ClientConnectorError")

    client = HttpClient(
        "http://user:pw-7f3c91d2@source.test/api",
        name="Source",
        timeout=5.0,
        transport=MockTransport(refused),
    )
    with pytest.raises(HttpUnavailable) as down:
        await client.send("GET", "/x")
    assert down.value.message == "Source is unreachable (ClientConnectorError)"
    assert "pw-7f3c91d2" not in str(down.value) and "source.test" not in str(down.value)
