"""Shared by the benchmarks: a real `hapi-grpc serve` subprocess on a free port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
SERVICE = "hapi.v1.IncidentAnalysisService"
# Set by `launched_server` itself.
_LAUNCH = frozenset(
    {
        "HAPI_GRPC_HOST",
        "HAPI_GRPC_PORT",
        "HAPI_METRICS_PORT",
        "HAPI_LLM_PROVIDER",
    }
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_serving(address: str, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """Block until the service at `address` reports SERVING (or fail)."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise SystemExit(f"server exited with {proc.returncode} during startup")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise SystemExit(f"server at {address} not SERVING within {timeout:.0f}s")


@dataclass(frozen=True)
class Server:
    address: str
    pid: int


@contextlib.contextmanager
def server_process(**env: str) -> Iterator[str]:
    """Start the server (embedded catalog, built-in analyst) and yield its address."""
    with launched_server(**env) as server:
        yield server.address


@contextlib.contextmanager
def launched_server(**env: str) -> Iterator[Server]:
    """Start `hapi-grpc serve` with its shipped defaults plus `env`; yield address and pid.

    Only what a user must set anyway is set here (address, free ports for
    gRPC and metrics); every other setting is the
    shipped default unless `env` names it.
    """
    port = free_port()
    environ = {
        **os.environ,
        "HAPI_GRPC_HOST": "127.0.0.1",
        "HAPI_GRPC_PORT": str(port),
        # The metrics endpoint runs as shipped, on a free port of its own.
        "HAPI_METRICS_PORT": str(free_port()),
        "HAPI_LLM_PROVIDER": "builtin",
        **env,
    }
    # Settings meant for another server must not leak in from the caller's
    # environment either: every HAPI_* variable not given here is dropped.
    for name in [k for k in environ if k.startswith("HAPI_")]:
        if name not in env and name not in _LAUNCH:
            environ.pop(name, None)
    exe = Path(sys.executable).with_name("hapi-grpc")
    address = f"127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [str(exe), "serve"], env=environ, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            try:
                wait_serving(address, proc, timeout=60)
            except BaseException:
                log.seek(0)
                print(log.read().decode(errors="replace")[-4000:], file=sys.stderr)
                raise
            yield Server(address, proc.pid)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
