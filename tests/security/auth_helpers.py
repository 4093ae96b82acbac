"""A real grpc.aio server with the auth interceptor over test handlers, and a
fake Kubernetes TokenReview API on loopback, for the authentication tests."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiohttp import web
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from hapi_grpc.security.auth import (
    Authenticator,
    AuthInterceptor,
    identity_of,
)
from hapi_grpc.security.token_review import TokenReviewAuthenticator

GOOD = "good-token-6b1f0c2e9a"
OTHER = "other-token-0d4e77a1c3"
SA_TOKEN = "service-account-token-5c2d9e"
TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"


async def whoami(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    identity = identity_of(context)
    return identity.subject.encode() if identity else b"anonymous"


async def count(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    for i in range(2):
        yield str(i).encode()


Start = Callable[..., Awaitable[grpc.aio.Channel]]


@pytest.fixture
async def serve() -> AsyncIterator[Start]:
    servers: list[grpc.aio.Server] = []
    channels: list[grpc.aio.Channel] = []

    async def start(
        authenticator: Authenticator, allowed_callers: list[str] | None = None
    ) -> grpc.aio.Channel:
        interceptor = AuthInterceptor(authenticator, allowed_callers=allowed_callers)
        server = grpc.aio.server(interceptors=[interceptor])
        handlers = {
            "WhoAmI": grpc.unary_unary_rpc_method_handler(whoami),
            "Count": grpc.unary_stream_rpc_method_handler(count),
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("test.Svc", handlers),)
        )
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        reflection.enable_server_reflection(("test.Svc", reflection.SERVICE_NAME), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        channels.append(channel)
        return channel

    yield start
    for channel in channels:
        await channel.close()
    for server in servers:
        await server.stop(None)


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def whoami_call(channel: grpc.aio.Channel, metadata: Any = None) -> bytes:
    return await channel.unary_unary("/test.Svc/WhoAmI")(b"", metadata=metadata, timeout=5)


async def denied(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    assert err.value.code() is grpc.StatusCode.UNAUTHENTICATED
    return err.value


def tokens_file(path: Path, *tokens: str) -> str:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("# service tokens\n\n" + "\n".join(tokens) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # Secret updates swap the file whole
    return str(path)


def assert_not_logged(caplog: pytest.LogCaptureFixture, *secrets: str) -> None:
    """No secret in any message or in any record attribute (extra= fields too)."""
    for text in (caplog.text, *(str(r.__dict__) for r in caplog.records)):
        for secret in secrets:
            assert secret not in text


class FakeKubernetesApi:
    """Answers TokenReviews like the API server: knows one valid token."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 201
        self.delay = 0.0
        self.audiences = ["hapi-grpc"]
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def review(self, request: web.Request) -> web.Response:
        self.started.set()
        assert request.headers["Authorization"] == f"Bearer {SA_TOKEN}"
        body = await request.json()
        self.requests.append(body)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        if self.status >= 300:
            return web.json_response({"kind": "Status", "code": self.status}, status=self.status)
        assert body["apiVersion"] == "authentication.k8s.io/v1"
        assert body["kind"] == "TokenReview"
        status: dict[str, Any] = {"authenticated": False, "error": "token not recognised"}
        if body["spec"]["token"] == GOOD:
            status = {
                "authenticated": True,
                "user": {"username": "system:serviceaccount:ops:caller", "groups": ["ops"]},
                "audiences": self.audiences,
            }
        body["status"] = status
        return web.json_response(body, status=self.status)


@pytest.fixture
async def kube_api() -> AsyncIterator[tuple[FakeKubernetesApi, str]]:
    api = FakeKubernetesApi()
    app = web.Application()
    app.router.add_post(TOKEN_REVIEW_PATH, api.review)
    # handler_cancellation: a client that hangs up cancels the handler, so the
    # test can see that the request was really aborted.
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield api, f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.fixture
def sa_token_file(tmp_path: Path) -> str:
    path = tmp_path / "sa-token"
    path.write_text(SA_TOKEN + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture
async def make_reviewer(
    sa_token_file: str,
) -> AsyncIterator[Callable[..., TokenReviewAuthenticator]]:
    made: list[TokenReviewAuthenticator] = []

    def make(url: str, **kwargs: Any) -> TokenReviewAuthenticator:
        reviewer = TokenReviewAuthenticator(url, None, sa_token_file, **kwargs)
        made.append(reviewer)
        return reviewer

    yield make
    for reviewer in made:
        await reviewer.close()
