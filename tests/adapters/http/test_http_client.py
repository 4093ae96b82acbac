"""`HttpClient` against a real aiohttp server: what every HTTP adapter gets from the one
client (the budget-clipped timeout, retries, bearer token files, errors that name the
remote and never its URL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from hapi_grpc.adapters.http.client import HttpClient, HttpUnavailable
from hapi_grpc.adapters.http.retry import RetryPolicy, TransientError
from hapi_grpc.adapters.http.transport import Response
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.domain.errors import BudgetExhaustedError

Answer = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _ok(request: web.Request) -> web.StreamResponse:
    return web.json_response({"ok": True})


@asynccontextmanager
async def _source(answer: Answer) -> AsyncIterator[tuple[str, list[web.Request]]]:
    """A server answering every path with `answer`; yields its base URL and the
    requests it received."""
    seen: list[web.Request] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(request)
        return await answer(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/api", seen
    finally:
        await runner.cleanup()


def _client(base_url: str, **kwargs: object) -> HttpClient:
    return HttpClient(base_url, name="Source", timeout=5.0, **kwargs)  # type: ignore[arg-type]


async def test_a_path_and_parameters_are_sent_under_the_base_url() -> None:
    async with _source(_ok) as (url, seen):
        client = _client(url)
        response = await client.send("GET", "/v1/x", params=[("q", "a b")])
        await client.close()
    assert response.json() == {"ok": True}
    (sent,) = seen
    assert sent.path_qs == "/api/v1/x?q=a+b"


async def test_a_transient_answer_is_retried_then_read() -> None:
    answers = iter([web.Response(status=503, text="busy"), web.Response(text="7")])

    async def answer(request: web.Request) -> web.StreamResponse:
        return next(answers)

    def read(response: Response) -> int:
        if response.status >= 500:
            raise TransientError(f"HTTP {response.status}")
        return int(response.body)

    async with _source(answer) as (url, seen):
        client = _client(url, retry=RetryPolicy(attempt_timeout=1.0, backoff_base=0.01))
        assert await client.call("GET", "/n", read, what="n", fail=RuntimeError) == 7
        await client.close()
    assert len(seen) == 2


async def test_retries_stop_at_the_policy_and_fail_with_the_adapters_error() -> None:
    async def busy(request: web.Request) -> web.StreamResponse:
        return web.Response(status=503, text="busy")

    def read(response: Response) -> None:
        raise TransientError(f"HTTP {response.status}")

    policy = RetryPolicy(attempt_timeout=1.0, max_retries=2, backoff_base=0.01)
    async with _source(busy) as (url, seen):
        client = _client(url, retry=policy)
        with pytest.raises(RuntimeError):
            await client.call("GET", "/n", read, what="n", fail=RuntimeError)
        await client.close()
    assert len(seen) == 3


async def test_the_timeout_is_clipped_to_the_callers_budget() -> None:
    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(5)
        return await _ok(request)

    async with _source(slow) as (url, _):
        client = _client(url)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with budget_scope(Budget.from_timeout(0.3)), pytest.raises(TimeoutError):
            await client.send("GET", "/slow")
        assert loop.time() - started < 1.0
        with budget_scope(Budget.from_timeout(0.0)), pytest.raises(BudgetExhaustedError):
            await client.send("GET", "/slow")
        await client.close()


async def test_the_bearer_token_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("tok-4d1e9a0b\n")
    async with _source(_ok) as (url, seen):
        client = _client(url, token_file=str(token))
        await client.send("GET", "/a")
        token.write_text("tok-8b2c6f31-rotated\n")
        await client.send("GET", "/b")
        token.write_text("")
        with pytest.raises(HttpUnavailable, match="Source: the bearer token file is empty"):
            await client.send("GET", "/c")
        await client.close()
    assert [r.headers["Authorization"] for r in seen] == [
        "Bearer tok-4d1e9a0b",
        "Bearer tok-8b2c6f31-rotated",
    ]


async def test_a_failed_connection_names_the_remote_never_its_url() -> None:
    async with _source(_ok) as (url, _):
        pass  # the port is free again: nothing listens on it
    client = _client(url.replace("http://", "http://user:pw-7f3c91d2@"))
    with pytest.raises(HttpUnavailable) as down:
        await client.send("GET", "/x")
    await client.close()
    assert down.value.message == "Source is unreachable (ClientConnectorError)"
    assert "pw-7f3c91d2" not in str(down.value) and "127.0.0.1" not in str(down.value)
