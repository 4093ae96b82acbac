"""Hostile bytes on every method of the real server, over a real channel.

Random bytes, mutated valid requests (bit flips, truncation, splices), nesting
past the decoder's limit, invalid UTF-8, maps far beyond their declared sizes
and impossible timestamps. Whatever arrives, the answer is OK,
INVALID_ARGUMENT or NOT_FOUND (never UNKNOWN or INTERNAL), and the server
logs no traceback and no error for any of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc
import pytest
from hypothesis import HealthCheck, given, settings

from tests.fakes import hostile_payloads as hp
from tests.helpers.grpc_server import RunningServer, running_server

ALLOWED = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def tracebacks(self) -> list[str]:
        return [
            f"{r.name}: {r.getMessage()[:200]}"
            for r in self.records
            if r.exc_info or r.levelno >= logging.ERROR or "Traceback" in r.getMessage()
        ]


@dataclass
class Served:
    loop: asyncio.AbstractEventLoop
    server: RunningServer
    log: _Records
    codes: dict[str, set[grpc.StatusCode]] = field(default_factory=dict)

    def send(self, method: str, payload: bytes) -> grpc.StatusCode:
        code = self.loop.run_until_complete(self._send(method, payload))
        self.codes.setdefault(method, set()).add(code)
        return code

    async def _send(self, method: str, payload: bytes) -> grpc.StatusCode:
        channel = self.server.channel
        try:
            if method in hp.STREAMING:
                call = channel.unary_stream(method)(payload, timeout=30)
                async for _ in call:
                    pass
            else:
                await channel.unary_unary(method)(payload, timeout=30)
        except grpc.aio.AioRpcError as err:
            return err.code()
        return grpc.StatusCode.OK


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    loop = asyncio.new_event_loop()
    log = _Records()
    logging.getLogger().addHandler(log)
    scope = running_server()
    server = loop.run_until_complete(scope.__aenter__())
    try:
        yield Served(loop, server, log)
    finally:
        loop.run_until_complete(scope.__aexit__(None, None, None))
        logging.getLogger().removeHandler(log)
        loop.close()


@pytest.mark.parametrize("method", hp.METHODS)
def test_valid_requests_succeed(served: Served, method: str) -> None:
    """The baseline the mutations start from is accepted, so mutations test decoding."""
    assert served.send(method, hp.valid_request(method)) == grpc.StatusCode.OK


@pytest.mark.parametrize("method", hp.METHODS)
def test_crafted_payloads_are_invalid_argument(served: Served, method: str) -> None:
    for payload in hp.crafted(method):
        assert served.send(method, payload) == grpc.StatusCode.INVALID_ARGUMENT
    assert served.log.tracebacks() == []


@pytest.mark.parametrize("method", hp.METHODS)
def test_random_and_mutated_bytes_never_answer_unknown_or_internal(
    served: Served, method: str
) -> None:
    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(payload=hp.hostile(method))
    def check(payload: bytes) -> None:
        code = served.send(method, payload)
        assert code in ALLOWED, (code, payload[:64])

    check()
    assert served.log.tracebacks() == []
    # Both kinds of answer were seen: the property is not vacuous.
    assert grpc.StatusCode.INVALID_ARGUMENT in served.codes[method]
