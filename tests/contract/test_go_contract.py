"""Runs the Go contract tests (tests/go) against the real server."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.contract.conftest import EXAMPLES, REPO, ServerProcess

GO_TESTS = REPO / "tests" / "go"

# The first run compiles the Go test binary (grpc, cel-go, protovalidate).
pytestmark = pytest.mark.timeout(600)


def test_go_contract(hapi_server: ServerProcess) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not on PATH")
    env = {
        **os.environ,
        "HAPI_ADDR": hapi_server.address,
        "HAPI_EXAMPLES_DIR": str(EXAMPLES),
        "GOFLAGS": (os.environ.get("GOFLAGS", "") + " -mod=readonly").strip(),
    }
    result = subprocess.run(
        [go, "test", "./...", "-count=1", "-v"],
        cwd=GO_TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    output = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"go test failed (exit {result.returncode}):\n{output}", pytrace=False)
    # Every Go test ran against the server; none was skipped.
    assert "--- SKIP" not in output, output
    assert output.count("--- PASS") >= 6, output
