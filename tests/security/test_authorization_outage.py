"""The Kubernetes API server unreachable or silent: calls fail closed with
UNAVAILABLE, within the review's timeout and the caller's deadline."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import grpc
import pytest

from tests.helpers.grpc_server import running_server
from tests.security.kube_world import World, analyze, bearer, code_of, stream_code


class Relay:
    """A TCP relay to the API server that can stop answering or go away."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("https://").rsplit(":", 1)
        self._upstream = (host, int(port))
        self.mode = "forward"  # or "silent": accept and never answer
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"https://127.0.0.1:{port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self.mode == "silent":
            await reader.read()  # until the client gives up
            return
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        self._writers.add(up_writer)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        """Drop every open connection (pooled ones too)."""
        for writer in self._writers:
            writer.close()
        self._writers.clear()

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            self._server = None


@pytest.fixture
async def relay(world: World) -> AsyncIterator[Relay]:
    relay = Relay(world.cluster.url)
    yield relay
    await relay.close()


async def test_api_server_unreachable_fails_closed_with_unavailable(
    world: World, relay: Relay
) -> None:
    url = await relay.start()
    async with running_server(
        **world.settings(tokenreview_api_url=url, authz_cache_seconds=0)
    ) as srv:
        token = world.caller_token
        code, _ = await code_of(
            srv.stub.AnalyzeIncident(analyze(world.team_a), metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.OK
        # The token's review is cached; the namespace check is not (TTL 0).
        await relay.close()
        code, details = await code_of(
            srv.stub.AnalyzeIncident(analyze(world.team_a), metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.UNAVAILABLE, details
        assert "Kubernetes API" in details
        code, _ = await stream_code(srv, world.team_a, token)
        assert code == grpc.StatusCode.UNAVAILABLE
        # A caller whose token was never reviewed: UNAVAILABLE too, not UNAUTHENTICATED.
        code, _ = await code_of(
            srv.stub.AnalyzeIncident(
                analyze(world.team_a), metadata=bearer(world.stranger_token), timeout=30
            )
        )
        assert code == grpc.StatusCode.UNAVAILABLE


async def test_a_silent_api_server_is_bounded_by_timeout_and_deadline(
    world: World, relay: Relay
) -> None:
    url = await relay.start()
    settings = world.settings(
        tokenreview_api_url=url, authz_cache_seconds=0, authz_timeout_seconds=0.5
    )
    async with running_server(**settings) as srv:
        token = world.caller_token
        code, _ = await code_of(
            srv.stub.AnalyzeIncident(analyze(world.team_a), metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.OK
        relay.mode = "silent"
        relay.cut()
        started = time.monotonic()
        code, _ = await code_of(
            srv.stub.AnalyzeIncident(analyze(world.team_a), metadata=bearer(token), timeout=30)
        )
        assert code == grpc.StatusCode.UNAVAILABLE
        assert time.monotonic() - started < 2.0  # the review's own timeout
        started = time.monotonic()
        code, _ = await code_of(
            srv.stub.AnalyzeIncident(analyze(world.team_a), metadata=bearer(token), timeout=0.3)
        )
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 1.0
