"""The server warns at start when anyone on the network could call it unauthenticated."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hapi_grpc.security.authorization import glob_match
from hapi_grpc.transport.server import is_loopback
from tests.helpers.grpc_server import running_server


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "without authentication" in r.getMessage()
    ]


async def test_warns_when_listening_beyond_loopback_without_auth(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with running_server(grpc_host="0.0.0.0"):
        pass
    (warning,) = _warnings(caplog)
    assert "HAPI_AUTH_MODE" in warning


async def test_quiet_on_loopback_or_with_auth(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO)
    async with running_server(grpc_host="127.0.0.1"):
        pass
    tokens = tmp_path / "tokens"
    tokens.write_text("a-static-token-0123\n", encoding="utf-8")
    async with running_server(
        grpc_host="0.0.0.0",
        auth_mode="static",
        auth_tokens_file=str(tokens),
        auth_static_namespaces=["payments"],
    ):
        pass
    assert _warnings(caplog) == []


def test_loopback_hosts() -> None:
    for host in ("127.0.0.1", "localhost", "[::1]", "::1", "127.0.0.2"):
        assert is_loopback(host), host
    for host in ("[::]", "0.0.0.0", "10.0.0.5", "hapi.example", ""):
        assert not is_loopback(host), host


def test_namespace_patterns_match_without_backtracking_blowups() -> None:
    assert glob_match("prod-*", "prod-payments")
    assert glob_match("*", "anything")
    assert glob_match("a*b*c", "a-x-b-y-c")
    assert not glob_match("prod-*", "staging")
    assert not glob_match("ops", "ops-2")
    assert glob_match("team-?", "team-a") and not glob_match("team-?", "team-ab")
    # Many stars against a long near-miss stays fast (no exponential search).
    assert not glob_match("*a" * 30 + "b", "a" * 253)
