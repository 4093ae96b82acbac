"""TokenReview authentication against a fake Kubernetes API server on loopback,
alone and through the interceptor of a real grpc.aio server."""

from __future__ import annotations

import asyncio
import logging
import time

import grpc
import pytest

from hapi_grpc.security.auth import (
    UNAVAILABLE_MESSAGE,
    AuthenticationUnavailable,
    Identity,
)
from tests.fakes.clock import ManualClock
from tests.security.auth_helpers import (
    GOOD,
    OTHER,
    SA_TOKEN,
    Start,
    assert_not_logged,
    bearer,
    denied,
    kube_api,
    make_reviewer,
    sa_token_file,
    serve,
    whoami_call,
)

__all__ = ["kube_api", "make_reviewer", "sa_token_file", "serve"]


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
    assert_not_logged(caplog, GOOD, SA_TOKEN)


async def test_tokenreview_server_down_refuses(make_reviewer, caplog, unused_tcp_port: int) -> None:
    caplog.set_level(logging.DEBUG)
    reviewer = make_reviewer(f"http://127.0.0.1:{unused_tcp_port}")
    with pytest.raises(AuthenticationUnavailable):
        await reviewer.authenticate(GOOD)
    assert "TokenReview failed" in caplog.text
    assert_not_logged(caplog, GOOD, SA_TOKEN)


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
    assert await whoami_call(channel, bearer(GOOD)) == b"system:serviceaccount:ops:caller"
    await denied(whoami_call(channel, bearer(OTHER)))


async def test_tokenreview_outage_is_unavailable_not_unauthenticated(
    serve: Start, make_reviewer, unused_tcp_port: int
) -> None:
    # The token may be fine: the caller should retry, not discard it.
    channel = await serve(make_reviewer(f"http://127.0.0.1:{unused_tcp_port}"))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await whoami_call(channel, bearer(GOOD))
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
        await channel.unary_unary("/test.Svc/WhoAmI")(b"", metadata=bearer(GOOD), timeout=0.5)
    assert err.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    # The review was abandoned with the call, not left running for 5 s.
    await asyncio.wait_for(api.cancelled.wait(), timeout=2)
    assert time.monotonic() - started < 2.0


async def test_listed_callers_only(serve: Start, kube_api, make_reviewer) -> None:
    _, url = kube_api
    channel = await serve(make_reviewer(url), ["system:serviceaccount:ops:other"])
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await whoami_call(channel, bearer(GOOD))
    # A valid token, but not a listed caller.
    assert err.value.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "system:serviceaccount:ops:caller" in (err.value.details() or "")
    await denied(whoami_call(channel, bearer(OTHER)))
