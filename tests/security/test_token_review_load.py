"""TokenReview under load, through a real grpc.aio server and the auth interceptor.

The Kubernetes API stand-in answers TokenReviews over HTTP after a delay, as a
slow API server does. Concurrent calls with one token share one review; a
flood of random tokens from one address leaves callers with valid tokens
(new ones from another address, known ones from anywhere) served in time, and
so does a sustained flood from many addresses.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from aiohttp import web

from hapi_grpc.security.auth import AuthInterceptor
from hapi_grpc.security.token_review import TokenReviewAuthenticator
from tests.fakes.clock import ManualClock
from tests.security.auth_helpers import (
    GOOD,
    SA_TOKEN,
    TOKEN_REVIEW_PATH,
    FakeKubernetesApi,
    bearer,
    sa_token_file,
    whoami,
)

__all__ = ["sa_token_file"]


class SlowKubernetesApi(FakeKubernetesApi):
    """Accepts GOOD and every token starting with 'valid-', after `delay` seconds."""

    grpc_port = 0

    async def review(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert request.headers["Authorization"] == f"Bearer {SA_TOKEN}"
        self.requests.append(body)
        await asyncio.sleep(self.delay)
        token = body["spec"]["token"]
        status: dict[str, Any] = {"authenticated": False}
        if token == GOOD or token.startswith("valid-"):
            status = {"authenticated": True, "user": {"username": f"user-{token[:12]}"}}
        return web.json_response({**body, "status": status}, status=201)


@pytest.fixture
async def world(sa_token_file: str) -> AsyncIterator[tuple[SlowKubernetesApi, Any, Any, Any]]:
    api = SlowKubernetesApi()
    app = web.Application()
    app.router.add_post(TOKEN_REVIEW_PATH, api.review)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    clock = ManualClock()
    reviewer = TokenReviewAuthenticator(
        f"http://127.0.0.1:{runner.addresses[0][1]}", None, sa_token_file, clock=clock
    )
    server = grpc.aio.server(interceptors=[AuthInterceptor(reviewer)])
    handlers = {"WhoAmI": grpc.unary_unary_rpc_method_handler(whoami)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Svc", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.add_insecure_port(f"[::1]:{port}")  # a second caller address on this host
    api.grpc_port = port  # for relays from more caller addresses
    await server.start()
    v4 = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    v6 = grpc.aio.insecure_channel(f"[::1]:{port}")
    try:
        yield api, clock, v4, v6
    finally:
        await v4.close()
        await v6.close()
        await server.stop(None)
        await reviewer.close()
        await runner.cleanup()


async def call(channel: grpc.aio.Channel, token: str, timeout: float = 5.0) -> str:
    """The caller's name, or the status code the call ended with."""
    try:
        answer = await channel.unary_unary("/test.Svc/WhoAmI")(
            b"", metadata=bearer(token), timeout=timeout
        )
    except grpc.aio.AioRpcError as err:
        return err.code().name
    return answer.decode()


async def test_concurrent_calls_with_one_new_token_share_one_review(world) -> None:
    api, _, v4, _ = world
    api.delay = 0.3
    answers = await asyncio.gather(*(call(v4, GOOD) for _ in range(20)))
    assert set(answers) == {f"user-{GOOD[:12]}"}
    assert len(api.requests) == 1


async def test_a_flood_of_random_tokens_leaves_valid_callers_served(world) -> None:
    api, clock, v4, v6 = world
    known = "valid-known-" + secrets.token_hex(8)
    assert await call(v4, known) == f"user-{known[:12]}"
    clock.advance(120)  # its cached acceptance expired: it is reviewed again
    api.delay = 0.5

    flood = [
        asyncio.create_task(call(v4, "random-" + secrets.token_hex(16), timeout=10))
        for _ in range(200)
    ]
    await asyncio.sleep(0.2)  # the flood is queued at the API server
    fresh = ["valid-new-" + secrets.token_hex(8) for _ in range(5)]
    served = await asyncio.gather(
        *(call(v6, token, timeout=3) for token in fresh), call(v4, known, timeout=3)
    )
    assert served == [f"user-{t[:12]}" for t in [*fresh, known]]

    outcomes = await asyncio.gather(*flood)
    assert set(outcomes) <= {"UNAUTHENTICATED", "UNAVAILABLE"}
    assert "UNAVAILABLE" in outcomes  # the flood's excess was refused at once, not queued
    # At most a handful of the flood's reviews ran: the rest never reached the API.
    assert len(api.requests) < 60


async def _forwarder(port: int, source: str) -> asyncio.Server:
    """A TCP relay to the server at `port` whose connections come from `source`
    (127.0.0.x): one more caller address."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(
            "127.0.0.1", port, local_addr=(source, 0)
        )
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    return await asyncio.start_server(relay, "127.0.0.1", 0)


async def test_a_sustained_flood_from_many_addresses_leaves_new_valid_tokens_served(
    world,
) -> None:
    # Forty addresses keep 18 random tokens each in flight; the per-address bounds
    # alone left a new caller behind every address's waiting reviews (FIFO).
    api = world[0]
    api.delay = 0.5
    relays = [await _forwarder(api.grpc_port, f"127.0.0.{i + 2}") for i in range(41)]
    channels = [
        grpc.aio.insecure_channel(f"127.0.0.1:{r.sockets[0].getsockname()[1]}") for r in relays
    ]
    stop = asyncio.Event()

    async def flood(channel: grpc.aio.Channel) -> None:
        while not stop.is_set():
            await call(channel, "random-" + secrets.token_hex(16), timeout=10)

    floods = [asyncio.create_task(flood(c)) for c in channels[:40] for _ in range(18)]
    try:
        await asyncio.sleep(4)  # the flood is sustained, not a burst
        fresh = ["valid-new-" + secrets.token_hex(8) for _ in range(2)]
        served = await asyncio.gather(*(call(channels[40], t, timeout=3) for t in fresh))
        assert served == [f"user-{t[:12]}" for t in fresh]
    finally:
        stop.set()
        await asyncio.gather(*floods)
        for channel in channels:
            await channel.close()
        for relay in relays:
            relay.close()
