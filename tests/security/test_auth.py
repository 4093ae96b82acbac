"""Bearer-token authentication through a real grpc.aio server, and TokenReview
against a fake Kubernetes API server on loopback."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiohttp import web
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from hapi_grpc.security.auth import (
    INVALID_TOKEN_MESSAGE,
    MISSING_TOKEN_MESSAGE,
    UNAVAILABLE_MESSAGE,
    AuthenticationUnavailable,
    Authenticator,
    AuthInterceptor,
    Identity,
    StaticTokenAuthenticator,
    bearer_token,
    current_identity,
)
from hapi_grpc.security.token_review import TokenReviewAuthenticator
from tests.fakes.clock import ManualClock

GOOD = "good-token-6b1f0c2e9a"
OTHER = "other-token-0d4e77a1c3"
SA_TOKEN = "service-account-token-5c2d9e"
TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"


async def _whoami(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    identity = current_identity()
    return identity.subject.encode() if identity else b"anonymous"


async def _count(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    for i in range(2):
        yield str(i).encode()


Start = Callable[[Authenticator], Awaitable[grpc.aio.Channel]]


@pytest.fixture
async def serve() -> AsyncIterator[Start]:
    servers: list[grpc.aio.Server] = []
    channels: list[grpc.aio.Channel] = []

    async def start(authenticator: Authenticator) -> grpc.aio.Channel:
        server = grpc.aio.server(interceptors=[AuthInterceptor(authenticator)])
        handlers = {
            "WhoAmI": grpc.unary_unary_rpc_method_handler(_whoami),
            "Count": grpc.unary_stream_rpc_method_handler(_count),
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


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


async def _whoami_call(channel: grpc.aio.Channel, metadata: Any = None) -> bytes:
    return await channel.unary_unary("/test.Svc/WhoAmI")(b"", metadata=metadata, timeout=5)


async def _denied(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    assert err.value.code() is grpc.StatusCode.UNAUTHENTICATED
    return err.value


def _tokens_file(path: Path, *tokens: str) -> str:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("# service tokens\n\n" + "\n".join(tokens) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # Secret updates swap the file whole
    return str(path)


# --- Interceptor with static tokens --------------------------------------------


async def test_static_tokens_gate_every_rpc(serve: Start, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    authenticator = StaticTokenAuthenticator.from_file(_tokens_file(tmp_path / "tokens", GOOD))
    channel = await serve(authenticator)

    assert await _whoami_call(channel, _bearer(GOOD)) == b"static-token"

    missing = await _denied(_whoami_call(channel))
    assert missing.details() == MISSING_TOKEN_MESSAGE
    wrong = await _denied(_whoami_call(channel, _bearer(OTHER)))
    assert wrong.details() == INVALID_TOKEN_MESSAGE
    for malformed in (
        (("authorization", f"Basic {GOOD}"),),
        (("authorization", "Bearer"),),
        (("authorization", f"Bearer {GOOD} extra"),),
        (("authorization", f"Bearer {GOOD}"), ("authorization", f"Bearer {GOOD}")),
    ):
        await _denied(_whoami_call(channel, malformed))

    stream = channel.unary_stream("/test.Svc/Count")
    await _denied(_drain(stream(b"", timeout=5)))
    assert await _drain(stream(b"", metadata=_bearer(GOOD), timeout=5)) == [b"0", b"1"]

    _assert_not_logged(caplog, GOOD, OTHER)


async def _drain(call: grpc.aio.UnaryStreamCall) -> list[bytes]:
    return [m async for m in call]


async def test_health_and_reflection_need_no_token(serve: Start) -> None:
    authenticator = StaticTokenAuthenticator([GOOD])
    channel = await serve(authenticator)

    reply = await health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=""), timeout=5
    )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING

    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    responses = [r async for r in stub.ServerReflectionInfo(iter([request]), timeout=5)]
    names = {s.name for s in responses[0].list_services_response.service}
    assert "test.Svc" in names


async def test_tokens_file_reloads_when_the_secret_changes(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    authenticator = StaticTokenAuthenticator.from_file(
        _tokens_file(path, GOOD), reload_interval=0.0
    )
    assert await authenticator.authenticate(GOOD) == Identity("static-token")
    assert await authenticator.authenticate(OTHER) is None

    _tokens_file(path, OTHER)
    assert await authenticator.authenticate(OTHER) == Identity("static-token")
    assert await authenticator.authenticate(GOOD) is None  # revoked

    path.unlink()  # unreadable: fail closed
    assert await authenticator.authenticate(OTHER) is None
    _tokens_file(path, GOOD)
    assert await authenticator.authenticate(GOOD) == Identity("static-token")


async def test_reload_is_rate_limited(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    authenticator = StaticTokenAuthenticator.from_file(_tokens_file(path, GOOD), reload_interval=60)
    _tokens_file(path, OTHER)
    # Within the interval the file is not looked at again.
    assert await authenticator.authenticate(GOOD) == Identity("static-token")


def test_tokens_file_must_exist_and_list_a_token(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        StaticTokenAuthenticator.from_file(str(tmp_path / "absent"))
    empty = tmp_path / "empty"
    empty.write_text("# nothing yet\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lists no token"):
        StaticTokenAuthenticator.from_file(str(empty))


async def test_failing_authenticator_refuses_and_logs_no_token(serve: Start, caplog) -> None:
    class Broken:
        async def authenticate(self, token: str) -> Identity | None:
            raise RuntimeError(f"backend exploded while checking {token}")

    caplog.set_level(logging.DEBUG)
    channel = await serve(Broken())
    error = await _denied(_whoami_call(channel, _bearer(GOOD)))
    assert error.details() == INVALID_TOKEN_MESSAGE
    assert any(getattr(r, "error_type", None) == "RuntimeError" for r in caplog.records)
    _assert_not_logged(caplog, GOOD)


def _assert_not_logged(caplog: pytest.LogCaptureFixture, *secrets: str) -> None:
    """No secret in any message or in any record attribute (extra= fields too)."""
    for text in (caplog.text, *(str(r.__dict__) for r in caplog.records)):
        for secret in secrets:
            assert secret not in text


def test_bearer_token_parsing() -> None:
    assert bearer_token([("Authorization", "bearer abc")]) == "abc"
    assert bearer_token([("authorization", b"Bearer abc")]) == "abc"
    assert bearer_token([("authorization", "Bearer " + "x" * 20_000)]) is None
    assert bearer_token([("authorization", "Bearer a\tb")]) is None
    assert bearer_token([]) is None


# --- TokenReview -----------------------------------------------------------------


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


async def test_tokenreview_accepts_and_caches(kube_api, make_reviewer) -> None:
    api, url = kube_api
    clock = ManualClock()
    reviewer = make_reviewer(url, audiences=["hapi-grpc"], cache_ttl=60, clock=clock)

    identity = await reviewer.authenticate(GOOD)
    assert identity == Identity("system:serviceaccount:ops:caller", ("ops",))
    clock.advance(59.9)
    assert await reviewer.authenticate(GOOD) == identity
    assert len(api.requests) == 1  # the second answer came from the cache
    assert api.requests[0]["spec"] == {"token": GOOD, "audiences": ["hapi-grpc"]}
    clock.advance(0.1)
    assert await reviewer.authenticate(GOOD) == identity
    assert len(api.requests) == 2  # reviewed again once the acceptance expired


async def test_tokenreview_refusals_are_cached_briefly(kube_api, make_reviewer) -> None:
    api, url = kube_api
    clock = ManualClock()
    reviewer = make_reviewer(url, negative_cache_ttl=10, clock=clock)

    assert await reviewer.authenticate(OTHER) is None
    clock.advance(9.9)
    assert await reviewer.authenticate(OTHER) is None
    assert len(api.requests) == 1
    clock.advance(0.1)
    assert await reviewer.authenticate(OTHER) is None
    assert len(api.requests) == 2  # asked again once the refusal expired


async def test_tokenreview_checks_the_audience(kube_api, make_reviewer) -> None:
    api, url = kube_api
    api.audiences = ["someone-else"]
    reviewer = make_reviewer(url, audiences=["hapi-grpc"])
    assert await reviewer.authenticate(GOOD) is None


async def test_tokenreview_fails_closed_and_recovers(kube_api, make_reviewer, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    api, url = kube_api
    reviewer = make_reviewer(url)

    api.status = 500
    with pytest.raises(AuthenticationUnavailable):
        await reviewer.authenticate(GOOD)
    api.status = 201
    # Errors are not cached: the next call asks again and succeeds.
    assert await reviewer.authenticate(GOOD) is not None
    assert len(api.requests) == 2
    _assert_not_logged(caplog, GOOD, SA_TOKEN)


async def test_tokenreview_server_down_refuses(make_reviewer, caplog, unused_tcp_port: int) -> None:
    caplog.set_level(logging.DEBUG)
    reviewer = make_reviewer(f"http://127.0.0.1:{unused_tcp_port}")
    with pytest.raises(AuthenticationUnavailable):
        await reviewer.authenticate(GOOD)
    assert "TokenReview failed" in caplog.text
    _assert_not_logged(caplog, GOOD, SA_TOKEN)


async def test_tokenreview_times_out(kube_api, make_reviewer) -> None:
    api, url = kube_api
    api.delay = 5.0
    reviewer = make_reviewer(url, timeout=0.2)
    started = time.monotonic()
    with pytest.raises(AuthenticationUnavailable):
        await reviewer.authenticate(GOOD)
    assert time.monotonic() - started < 2.0


async def test_cancelling_the_caller_aborts_the_request(kube_api, make_reviewer) -> None:
    api, url = kube_api
    api.delay = 5.0
    reviewer = make_reviewer(url)
    task = asyncio.create_task(reviewer.authenticate(GOOD))
    await asyncio.wait_for(api.started.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The server saw the connection go away long before its 5 s answer.
    await asyncio.wait_for(api.cancelled.wait(), timeout=2)


async def test_tokenreview_through_the_interceptor(serve: Start, kube_api, make_reviewer) -> None:
    _, url = kube_api
    channel = await serve(make_reviewer(url))
    assert await _whoami_call(channel, _bearer(GOOD)) == b"system:serviceaccount:ops:caller"
    await _denied(_whoami_call(channel, _bearer(OTHER)))


async def test_tokenreview_outage_is_unavailable_not_unauthenticated(
    serve: Start, make_reviewer, unused_tcp_port: int
) -> None:
    # The token may be fine: the caller should retry, not discard it.
    channel = await serve(make_reviewer(f"http://127.0.0.1:{unused_tcp_port}"))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _whoami_call(channel, _bearer(GOOD))
    assert err.value.code() is grpc.StatusCode.UNAVAILABLE
    assert err.value.details() == UNAVAILABLE_MESSAGE


async def test_tokenreview_is_bound_by_the_callers_deadline(
    serve: Start, kube_api, make_reviewer
) -> None:
    api, url = kube_api
    api.delay = 5.0
    channel = await serve(make_reviewer(url, timeout=30.0))
    started = time.monotonic()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await channel.unary_unary("/test.Svc/WhoAmI")(b"", metadata=_bearer(GOOD), timeout=0.5)
    assert err.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    # The review was abandoned with the call, not left running for 5 s.
    await asyncio.wait_for(api.cancelled.wait(), timeout=2)
    assert time.monotonic() - started < 2.0


async def test_listed_callers_only(serve: Start, kube_api, make_reviewer) -> None:
    _, url = kube_api
    server = grpc.aio.server(
        interceptors=[
            AuthInterceptor(make_reviewer(url), allowed_callers=["system:serviceaccount:ops:other"])
        ]
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "test.Svc", {"WhoAmI": grpc.unary_unary_rpc_method_handler(_whoami)}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await _whoami_call(channel, _bearer(GOOD))
            assert err.value.code() is grpc.StatusCode.PERMISSION_DENIED
            assert "system:serviceaccount:ops:caller" in (err.value.details() or "")
            await _denied(_whoami_call(channel, _bearer(OTHER)))
    finally:
        await server.stop(None)


def test_in_cluster_needs_the_kubernetes_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ValueError):
        TokenReviewAuthenticator.in_cluster()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    reviewer = TokenReviewAuthenticator.in_cluster(audiences=["hapi-grpc"])
    assert reviewer._url == "https://10.0.0.1:6443" + TOKEN_REVIEW_PATH
