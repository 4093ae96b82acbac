"""`hapi-grpc serve` as a child process, the way users run it, with its log and resources."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import psutil
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "hapi.v1.IncidentAnalysisService"
# Settings a developer's shell may carry that would point the server elsewhere.
_FOREIGN = ("HAPI_", "OTEL_")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServeProcess:
    """Starts `hapi-grpc serve` with only the given settings on top of the shipped defaults."""

    def __init__(self, **settings: str) -> None:
        self.port = free_port()
        self.metrics_port = free_port()
        self.settings = {
            "HAPI_GRPC_HOST": "127.0.0.1",
            "HAPI_GRPC_PORT": str(self.port),
            # The shipped 9090 would collide with other servers on the machine.
            "HAPI_METRICS_HOST": "127.0.0.1",
            "HAPI_METRICS_PORT": str(self.metrics_port),
            **settings,
        }
        self._log = tempfile.NamedTemporaryFile(prefix="hapi-serve-", suffix=".log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.ps: psutil.Process | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    async def start(self, timeout: float = 60.0) -> None:
        # A port found free may be taken by another process before the server binds it
        # (other test runs share the machine): then try new ports, a few times.
        for attempt in range(3):
            self._spawn()
            try:
                await self._wait_serving(timeout)
                return
            except RuntimeError:
                if attempt == 2 or "address already in use" not in self.log():
                    raise
            self._repick_ports()

    def run_refused(self, timeout: float = 60.0) -> int:
        """Runs `serve` for one that stops by itself (a setting refused): its exit status."""
        self._spawn()
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def _repick_ports(self) -> None:
        self.port, self.metrics_port = free_port(), free_port()
        self.settings["HAPI_GRPC_PORT"] = str(self.port)
        self.settings["HAPI_METRICS_PORT"] = str(self.metrics_port)

    def _spawn(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
        env.update(self.settings)
        exe = Path(sys.executable).with_name("hapi-grpc")
        self.proc = subprocess.Popen(
            [str(exe), "serve"], env=env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT
        )
        self.ps = psutil.Process(self.proc.pid)

    async def _wait_serving(self, timeout: float) -> None:
        assert self.proc is not None
        end = time.monotonic() + timeout
        async with grpc.aio.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < end:  # bounded by `timeout`
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        f"hapi-grpc serve exited with {self.proc.returncode}:\n{self.log()[-3000:]}"
                    )
                try:
                    reply = await stub.Check(
                        health_pb2.HealthCheckRequest(service=SERVICE), timeout=1
                    )
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.aio.AioRpcError:
                    pass
                await asyncio.sleep(0.1)
        raise RuntimeError(f"hapi-grpc serve not SERVING within {timeout:.0f}s")

    def rss(self) -> int:
        assert self.ps is not None
        return int(self.ps.memory_info().rss)

    def fds(self) -> int:
        assert self.ps is not None
        return int(self.ps.num_fds())

    def log(self) -> str:
        with open(self._log.name, "rb") as handle:
            return handle.read().decode(errors="replace")

    async def terminate(self, wait: float) -> tuple[int | None, float]:
        """SIGTERM, then wait up to `wait` s: (exit code or None if still running, seconds)."""
        assert self.proc is not None
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        end = started + wait
        while self.proc.poll() is None and time.monotonic() < end:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        return self.proc.poll(), time.monotonic() - started

    async def close(self) -> None:
        """Stop the process whatever state it is in, and drop the log file."""
        if self.proc is not None and self.proc.poll() is None:
            code, _ = await self.terminate(10.0)
            if code is None:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
