"""Contract tests against the real server process.

`hapi_server` starts `hapi-grpc serve` once per session on a free 127.0.0.1
port (embedded catalog, plaintext) and waits for health SERVING; teardown sends
SIGTERM and waits for the exit. Its model is `tests.fakes.first_hit_model`, served
over the OpenAI protocol by a process of its own: these servers read no cluster, and
a selection with typed parameters must cross the wire (the built-in analyst selects
nothing that changes the cluster without evidence). `start_server` starts more,
independent servers (built-in analyst unless told) for tests that need their own.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hapi_grpc.adapters.catalog.loader import load_bundled_catalog

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TOOLS_BIN = REPO / ".tools" / "bin"
SERVICE = "hapi.v1.IncidentAnalysisService"
STARTUP_TIMEOUT = 60.0
GRACE_SECONDS = 5.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command() -> list[str]:
    """The installed console script next to this interpreter (the venv's)."""
    script = Path(sys.executable).parent / "hapi-grpc"
    if script.exists():
        return [str(script), "serve"]
    found = shutil.which("hapi-grpc")
    if found is None:
        pytest.fail("the hapi-grpc console script is not installed (make install)")
    return [found, "serve"]


@dataclass
class ServerProcess:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    env: dict[str, str] = field(repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-8000:]
        except OSError:
            return ""

    def health_status(self, service: str = "", timeout: float = 1.0) -> int | None:
        """The health status of `service`, or None when the call fails."""
        with grpc.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            try:
                resp = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
            except grpc.RpcError:
                return None
            return int(resp.status)

    def wait_serving(self, timeout: float = STARTUP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"server exited with {self.proc.returncode} during startup:\n{self.log()}"
                )
            if self.health_status(SERVICE) == health_pb2.HealthCheckResponse.SERVING:
                return
            time.sleep(0.1)
        pytest.fail(f"server not SERVING within {timeout:.0f}s:\n{self.log()}")

    def terminate(self, timeout: float = GRACE_SECONDS + 15) -> int:
        """SIGTERM and wait for the exit (SIGKILL after `timeout`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            pytest.fail(f"server did not exit within {timeout:.0f}s of SIGTERM:\n{self.log()}")


def _wire_catalog(directory: Path) -> Path:
    """The bundled catalog as a contract fixture: no cluster is read by these servers, so
    without this nothing that changes the cluster would be automated (its premises are
    not shown) and no selected parameters would cross the wire. Every workflow is
    declared read-only and without preconditions here; ids and parameters are unchanged."""
    path = directory / "wire-catalog.yaml"
    workflows = [
        {**w.model_dump(mode="json", exclude={"preconditions", "invariants"}), "read_only": True}
        for w in load_bundled_catalog()
    ]
    path.write_text(yaml.safe_dump({"workflows": workflows}), encoding="utf-8")
    return path


def _start(log_dir: Path, extra_env: dict[str, str] | None = None) -> ServerProcess:
    port = free_port()
    env = {
        **os.environ,
        "HAPI_GRPC_HOST": "127.0.0.1",
        "HAPI_GRPC_PORT": str(port),
        "HAPI_METRICS_HOST": "127.0.0.1",
        "HAPI_METRICS_PORT": "0",
        "HAPI_SHUTDOWN_GRACE_SECONDS": str(GRACE_SECONDS),
        "HAPI_LOG_FORMAT": "text",
        **(extra_env or {}),
    }
    # Settings meant for another server must not leak in from the caller.
    for name in ("HAPI_DATA_STORAGE_URL", "HAPI_CATALOG_FILE", "HAPI_CACHE_URL"):
        env.pop(name, None)
    if "HAPI_LLM_PROVIDER" not in (extra_env or {}):
        env["HAPI_LLM_PROVIDER"] = "builtin"
    log_dir.mkdir(parents=True, exist_ok=True)
    if "HAPI_CATALOG_FILE" not in (extra_env or {}):
        env["HAPI_CATALOG_FILE"] = str(_wire_catalog(log_dir))
    log_path = log_dir / f"server-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            server_command(), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    server = ServerProcess(proc=proc, port=port, log_path=log_path, env=env)
    try:
        server.wait_serving()
    except BaseException:
        server.terminate()
        raise
    return server


@pytest.fixture(scope="session")
def first_hit_llm() -> Iterator[dict[str, str]]:
    """The first-hit model served over the OpenAI protocol; the server settings to use it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.first_hit_model"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        if not base_url.startswith("http"):
            pytest.fail(f"the first-hit model did not start (exit {proc.poll()})")
        yield {
            "HAPI_LLM_PROVIDER": "openai",
            "HAPI_LLM_BASE_URL": base_url,
            "HAPI_LLM_MODEL": "first-hit",
            "HAPI_LLM_API_KEY": "sk-contract-key",
            "HAPI_LLM_MAX_RETRIES": "0",
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def hapi_server(
    tmp_path_factory: pytest.TempPathFactory, first_hit_llm: dict[str, str]
) -> Iterator[ServerProcess]:
    server = _start(tmp_path_factory.mktemp("hapi-server"), first_hit_llm)
    yield server
    code = server.terminate()
    assert code == 0, f"server exited with {code} after SIGTERM:\n{server.log()}"


@pytest.fixture
def start_server(
    tmp_path: Path,
) -> Iterator[Callable[[dict[str, str] | None], ServerProcess]]:
    started: list[ServerProcess] = []

    def start(extra_env: dict[str, str] | None = None) -> ServerProcess:
        server = _start(tmp_path, extra_env)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.terminate()


@pytest.fixture(scope="session")
def go_tools() -> Path:
    """.tools/bin with grpcurl and grpc_health_probe, installed when missing."""
    needed = ("grpcurl", "grpc_health_probe")
    if not all((TOOLS_BIN / name).exists() for name in needed):
        if shutil.which("go") is None:
            pytest.skip("grpcurl/grpc_health_probe are not installed and Go is not on PATH")
        result = subprocess.run(
            [str(REPO / "scripts" / "install_go_tools.sh"), *needed],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0:
            pytest.fail(f"install_go_tools.sh failed:\n{result.stdout}\n{result.stderr}")
    return TOOLS_BIN
