"""A throwaway redis-server on a free loopback port, for the shared-cache tests.

    with running_redis(tmp_path) as redis:
        cache = CatalogCache(redis.url)

Skips the test when the redis-server binary is missing (`make test` installs it).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.local_process import free_port, stop_process

__all__ = ["RedisServer", "running_redis"]


@dataclass
class RedisServer:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        stop_process(self.process, timeout=5)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise RuntimeError("redis-server did not start listening in time")


@contextlib.contextmanager
def running_redis(directory: Path) -> Iterator[RedisServer]:
    """A private redis-server (no persistence, files in `directory`), stopped afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server binary not found")
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(directory),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    server = RedisServer(port, process)
    try:
        _wait_for_port(port, process)
        yield server
    finally:
        server.stop()
