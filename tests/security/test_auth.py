"""Bearer-token authentication through a real grpc.aio server: static tokens,
the interceptor, parsing."""

from __future__ import annotations

import logging
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from hapi_grpc.domain.sensitive import REDACTED, redact
from hapi_grpc.security.auth import (
    INVALID_TOKEN_MESSAGE,
    MISSING_TOKEN_MESSAGE,
    Identity,
    StaticTokenAuthenticator,
    bearer_token,
)
from tests.security.auth_helpers import (
    GOOD,
    OTHER,
    Start,
    assert_not_logged,
    bearer,
    denied,
    kube_api,
    make_reviewer,
    sa_token_file,
    serve,
    tokens_file,
    whoami_call,
)

__all__ = ["kube_api", "make_reviewer", "sa_token_file", "serve"]


# --- Interceptor with static tokens --------------------------------------------


async def test_static_tokens_gate_every_rpc(serve: Start, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    authenticator = StaticTokenAuthenticator.from_file(tokens_file(tmp_path / "tokens", GOOD))
    channel = await serve(authenticator)

    assert await whoami_call(channel, bearer(GOOD)) == b"static-token"

    missing = await denied(whoami_call(channel))
    assert missing.details() == MISSING_TOKEN_MESSAGE
    wrong = await denied(whoami_call(channel, bearer(OTHER)))
    assert wrong.details() == INVALID_TOKEN_MESSAGE
    for malformed in (
        (("authorization", f"Basic {GOOD}"),),
        (("authorization", "Bearer"),),
        (("authorization", f"Bearer {GOOD} extra"),),
        (("authorization", f"Bearer {GOOD}"), ("authorization", f"Bearer {GOOD}")),
    ):
        await denied(whoami_call(channel, malformed))

    stream = channel.unary_stream("/test.Svc/Count")
    await denied(_drain(stream(b"", timeout=5)))
    assert await _drain(stream(b"", metadata=bearer(GOOD), timeout=5)) == [b"0", b"1"]

    assert_not_logged(caplog, GOOD, OTHER)


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
    authenticator = StaticTokenAuthenticator.from_file(tokens_file(path, GOOD), reload_interval=0.0)
    assert await authenticator.authenticate(GOOD) == Identity("static-token")
    assert await authenticator.authenticate(OTHER) is None

    tokens_file(path, OTHER)
    assert await authenticator.authenticate(OTHER) == Identity("static-token")
    assert await authenticator.authenticate(GOOD) is None  # revoked

    path.unlink()  # unreadable: fail closed
    assert await authenticator.authenticate(OTHER) is None
    tokens_file(path, GOOD)
    assert await authenticator.authenticate(GOOD) == Identity("static-token")


async def test_a_revoked_token_leaves_the_redaction_registry_on_reload(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    revoked, kept = "revoked-token-" + "a" * 24, "kept-token-" + "b" * 24
    authenticator = StaticTokenAuthenticator.from_file(
        tokens_file(path, revoked), reload_interval=0.0
    )
    assert redact(f"x {revoked} y") == f"x {REDACTED} y"

    tokens_file(path, kept)
    assert await authenticator.authenticate(kept) == Identity("static-token")
    assert redact(f"x {kept} y") == f"x {REDACTED} y"
    assert redact(f"x {revoked} y") == f"x {revoked} y"  # no longer held in memory


async def test_reload_is_rate_limited(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    authenticator = StaticTokenAuthenticator.from_file(tokens_file(path, GOOD), reload_interval=60)
    tokens_file(path, OTHER)
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
        async def authenticate(self, token: str, peer: str = "") -> Identity | None:
            raise RuntimeError(f"backend exploded while checking {token}")

    caplog.set_level(logging.DEBUG)
    channel = await serve(Broken())
    error = await denied(whoami_call(channel, bearer(GOOD)))
    assert error.details() == INVALID_TOKEN_MESSAGE
    assert any(getattr(r, "error_type", None) == "RuntimeError" for r in caplog.records)
    assert_not_logged(caplog, GOOD)


def test_bearer_token_parsing() -> None:
    assert bearer_token([("Authorization", "bearer abc")]) == "abc"
    assert bearer_token([("authorization", b"Bearer abc")]) == "abc"
    assert bearer_token([("authorization", "Bearer " + "x" * 20_000)]) is None
    assert bearer_token([("authorization", "Bearer a\tb")]) is None
    assert bearer_token([]) is None
