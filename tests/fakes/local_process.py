"""Running a real server binary on loopback for a test: a free port, a logged start, ready, stop."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_logged(argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """Start `argv` with its stdout and stderr written to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT)


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    """Poll `url` until it answers 200; fail with the log's tail if the process dies."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"process exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        time.sleep(0.1)
    raise RuntimeError(f"{url} was not ready within {timeout}s")


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """Terminate `process` if it still runs; kill it if it does not exit within `timeout`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
