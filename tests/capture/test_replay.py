"""A captured investigation replays to the same decision with the same tool reads.

The "production" run is `hapi-grpc eval` on one recorded incident: a real
`hapi-grpc serve` with the Kubernetes and Prometheus toolsets on, against a
real kube-apiserver and a real Prometheus, with `HAPI_CAPTURE_DIR` set. What it
captured is then replayed with `hapi-grpc eval --cases-dir <capture dir>`,
which starts a fresh API server and Prometheus from the captured files only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.harness.cases import CASES_DIR
from hapi_grpc.capture.segments import closed_segments
from hapi_grpc.cases.case import load_case

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).with_name("hapi-grpc")
CASE = "oom-leak-visible-only-in-app-gauges"  # cluster, logs and gauges read


def evaluate(cases: Path, out: Path, **settings: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAPI_")} | settings
    done = subprocess.run(
        [str(EXE), "eval", "--cases-dir", str(cases), "--json", str(out), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def run_of(report: dict[str, Any]) -> dict[str, Any]:
    [case] = report["cases"]
    [run] = case["outcomes"]
    return run


def decision(run: dict[str, Any]) -> tuple[Any, ...]:
    params = json.dumps(run["parameters"], sort_keys=True)
    return run["outcome"], run["workflow_id"], params, run["review_reason"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_captured_investigation_replays_on_a_fresh_api_server(tmp_path: Path) -> None:
    production = tmp_path / "production"
    production.mkdir()
    shutil.copytree(CASES_DIR / CASE, production / CASE)
    captured = tmp_path / "captured"
    first = run_of(evaluate(production, tmp_path / "a.json", HAPI_CAPTURE_DIR=str(captured)))
    # The server wrote a record; the replay unpacks it into the case directory first.
    assert closed_segments(captured)
    assert not [d for d in captured.iterdir() if not d.name.startswith(".")]

    replay = run_of(evaluate(captured, tmp_path / "b.json"))
    assert not closed_segments(captured)
    [directory] = [d for d in captured.iterdir() if d.is_dir() and not d.name.startswith(".")]
    case = load_case(directory)
    assert case.meta.captured is not None and case.expected.unreviewed
    kinds = {o["kind"] for o in case.objects}
    assert {"Pod", "Deployment"} <= kinds
    pod = next(o for o in case.objects if o["kind"] == "Pod")
    assert pod["status"]["containerStatuses"] and "managedFields" not in pod["metadata"]
    assert case.logs and case.metrics and "process_resident_memory_bytes" in case.metrics
    assert yaml.safe_load((directory / "catalog.yaml").read_text())["workflows"]
    assert first["tools_used"], "the production run read nothing"
    assert decision(replay) == decision(first)
    assert replay["tools_used"] == first["tools_used"]
    assert replay["agrees_with_capture"] is True
