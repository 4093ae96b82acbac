"""Capture and `hapi-grpc cases review` as the container image runs them: the
installed package alone, the evaluation harness of a source checkout out of reach."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml

from hapi.v1 import service_pb2_grpc
from hapi_grpc.client import load_analyze_request

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# `evals` cannot be imported, wherever the package is installed from.
LAUNCH = """
import sys
from importlib.abc import MetaPathFinder

class NoCheckout(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "evals" or name.startswith("evals."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoCheckout())
from hapi_grpc.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _environ(cwd: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAPI_")}
    env.pop("PYTHONPATH", None)
    return env | {"HAPI_LLM_PROVIDER": "builtin"} | extra


def _hapi(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, *argv],
        cwd=cwd,
        env=_environ(cwd),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    captured = tmp_path / "captured"
    port = _free_port()
    env = _environ(
        tmp_path,
        HAPI_GRPC_HOST="127.0.0.1",
        HAPI_GRPC_PORT=str(port),
        HAPI_METRICS_PORT="-1",
        HAPI_CAPTURE_DIR=str(captured),
    )
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "serve"],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield f"127.0.0.1:{port}", captured
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def _analyze(address: str, log: Path) -> None:
    request = load_analyze_request(EXAMPLES / "oomkilled.json")
    request.incident.remediation_id = "rr-installed-1"
    deadline = time.monotonic() + 60
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.IncidentAnalysisServiceStub(channel)
        while True:
            try:
                stub.AnalyzeIncident(request, timeout=30, wait_for_ready=True)
                return
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
                time.sleep(0.2)


def test_the_installed_package_captures_and_labels_without_the_harness(
    tmp_path: Path, served: tuple[str, Path]
) -> None:
    address, captured = served
    _analyze(address, tmp_path / "server.log")
    # The running server's segment is closed within seconds; the command unpacks it.
    deadline = time.monotonic() + 20
    found: list[Path] = []
    while not found and time.monotonic() < deadline:
        listed = _hapi(tmp_path, "cases", "review", str(captured))
        assert listed.returncode == 0, listed.stderr
        found = [d for d in captured.iterdir() if (d / "expected.yaml").exists()]
        time.sleep(0.2)
    assert len(found) == 1, (tmp_path / "server.log").read_text()[-3000:]
    case = found[0]
    meta = yaml.safe_load((case / "case.yaml").read_text())
    assert meta["captured"]["remediation_id"] == "rr-installed-1"
    assert yaml.safe_load((case / "expected.yaml").read_text())["unreviewed"] is True
    assert case.name in listed.stdout and "1 captured cases, 1 unreviewed" in listed.stdout
    labelled = _hapi(
        tmp_path, "cases", "review", str(captured), "--expect-review", case.name, "any"
    )
    assert labelled.returncode == 0, labelled.stderr
    expected = yaml.safe_load((case / "expected.yaml").read_text())
    assert expected["label"]["source"] == "operator" and "unreviewed" not in expected
