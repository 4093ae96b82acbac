"""Shared by the benchmarks: a real `hapi-grpc serve` subprocess on a free port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def server_process(**env: str) -> Iterator[str]:
    """Start the server (embedded catalog, built-in analyst) and yield its address."""
    port = free_port()
    environ = {
        **os.environ,
        "HAPI_GRPC_HOST": "127.0.0.1",
        "HAPI_GRPC_PORT": str(port),
        "HAPI_METRICS_PORT": "-1",
        "HAPI_LOG_LEVEL": "WARNING",
        "HAPI_MAX_CONCURRENT_RPCS": "10000",
        **env,
    }
    exe = Path(sys.executable).with_name("hapi-grpc")
    proc = subprocess.Popen([str(exe), "serve"], env=environ, cwd=ROOT)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        with grpc.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                try:
                    reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                except grpc.RpcError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("server did not become SERVING")
                time.sleep(0.1)
        yield address
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
