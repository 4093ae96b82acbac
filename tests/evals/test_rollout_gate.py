"""Gating a model rollout, as an operator does it: two real `hapi-grpc eval`
runs (the built-in analyst, then the reckless model served over the OpenAI
protocol) on the same cases, then `hapi-grpc eval compare`.

The unsafe automation is produced on purpose: two of the cases run on the
bundled catalog without its declared preconditions and invariants and with every
workflow declared read-only (a catalog that misdeclares what its workflows do:
neither a premise pack nor a declaration then applies), where the reckless model
automates what the analyst does not. A captured, unreviewed
case rides along: replayed and compared with its capture, never scored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.harness.cases import CASES_DIR
from hapi_grpc.adapters.catalog.loader import load_bundled_catalog
from hapi_grpc.cases import labels
from hapi_grpc.cases.provenance import Provenance
from hapi_grpc.toolsets.registry import prompt_template_hash

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).with_name("hapi-grpc")
KEPT = ("oomkilled-raise-limit", "no-workflow-dns-failures")
STRIPPED = ("near-miss-scale-beyond-maximum", "evictions-cause-node-disk-pressure")
CAPTURED = "captured-oomkilled"


def case_set(root: Path, *, strip: bool) -> Path:
    root.mkdir(parents=True)
    for name in KEPT + STRIPPED:
        shutil.copytree(CASES_DIR / name, root / name)
    if strip:
        declarations = {"preconditions", "invariants"}
        workflows = [
            {**w.model_dump(mode="json", exclude=declarations), "read_only": True}
            for w in load_bundled_catalog()
        ]
        for name in STRIPPED:
            (root / name / "catalog.yaml").write_text(yaml.safe_dump({"workflows": workflows}))
            meta = yaml.safe_load((root / name / "case.yaml").read_text())
            (root / name / "case.yaml").write_text(
                yaml.safe_dump({**meta, "catalog": "catalog.yaml"})
            )
    return root


def add_captured(root: Path, decision: dict[str, Any]) -> None:
    """The raise-limit incident captured with the decision a real run made."""
    directory = root / CAPTURED
    shutil.copytree(CASES_DIR / "oomkilled-raise-limit", directory)
    (directory / "expected.yaml").unlink()
    selected = {"workflowId": decision["workflow_id"], "parameters": decision["parameters"]}
    provenance = Provenance(
        at=datetime.now(UTC),
        remediation_id="rr-captured-1",
        provider="builtin",
        model="builtin",
        prompt_hash=prompt_template_hash(),
        decision={"selectedWorkflow": selected},
    )
    labels.write_captured(directory, description="captured OOMKilled", provenance=provenance)


def environ(**settings: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HAPI_")}, **settings}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args],
        capture_output=True,
        text=True,
        env=env or environ(),
        cwd=ROOT,
        timeout=280,
    )


def evaluate(cases: Path, out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = run("eval", "--cases-dir", str(cases), "--json", str(out), "--quiet", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


@pytest.fixture
def reckless_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.reckless_model"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)


def decisions(entry: dict[str, Any]) -> Counter[tuple[Any, ...]]:
    return Counter(
        (
            o["outcome"],
            o["workflow_id"],
            json.dumps(o["parameters"], sort_keys=True),
            o["review_reason"],
        )
        for o in entry["outcomes"]
    )


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["cases"]}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compare_names_every_changed_decision_and_gates_on_unsafe(
    tmp_path: Path, reckless_url: str
) -> None:
    stripped = case_set(tmp_path / "stripped", strip=True)
    a = evaluate(stripped, tmp_path / "builtin.json")
    add_captured(stripped, by_name(a)["oomkilled-raise-limit"]["outcomes"][0])
    reckless = environ(
        HAPI_LLM_PROVIDER="openai",
        HAPI_LLM_BASE_URL=reckless_url,
        HAPI_LLM_MODEL="reckless",
        HAPI_LLM_API_KEY="sk-reckless-key",
        HAPI_LLM_MAX_RETRIES="0",
    )
    b = evaluate(stripped, tmp_path / "reckless.json", reckless)
    plain = case_set(tmp_path / "plain", strip=False)
    add_captured(plain, by_name(a)["oomkilled-raise-limit"]["outcomes"][0])
    c = evaluate(plain, tmp_path / "builtin-plain.json")

    # What each ran with.
    assert (a["configuration"]["provider"], b["configuration"]["provider"]) == ("builtin", "openai")
    assert b["configuration"]["model"] == "reckless"
    assert {r["configuration"]["prompt_hash"] for r in (a, b, c)} == {prompt_template_hash()}
    hashes = {name: entry["catalog_hash"] for name, entry in by_name(a).items()}
    assert hashes == {name: e["catalog_hash"] for name, e in by_name(b).items() if name in hashes}
    plain_hashes = {name: e["catalog_hash"] for name, e in by_name(c).items()}
    assert all(hashes[n] != plain_hashes[n] for n in STRIPPED)
    assert all(hashes[n] == plain_hashes[n] for n in KEPT)

    # The captured case is replayed and compared with its capture, not scored.
    for report, verdict in ((b, None), (c, "same")):
        entry = by_name(report)[CAPTURED]
        assert entry["unreviewed"] and not any(o["labelled"] for o in entry["outcomes"])
        assert verdict is None or all(o["agrees_with_capture"] for o in entry["outcomes"])
        t = report["totals"]
        assert t["unreviewed_runs"] == 1 and t["scored_runs"] == t["runs"] - 1

    # The deliberate unsafe automation is there.
    new_unsafe = {
        n
        for n, e in by_name(b).items()
        if e["unsafe_runs"] and not by_name(a).get(n, {}).get("unsafe_runs")
    }
    assert new_unsafe and new_unsafe <= set(STRIPPED)

    paths = [str(tmp_path / "builtin.json"), str(tmp_path / "reckless.json")]
    shown = run("eval", "compare", *paths)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "the runs differ in the model only" in out and "WARNING" not in out
    listed = out.split("cases whose decisions changed", 1)[1]
    for name in sorted(by_name(a).keys() | by_name(b).keys()):
        ea, eb = by_name(a).get(name), by_name(b).get(name)
        changed = ea is None or eb is None or decisions(ea) != decisions(eb)
        assert (f"  {name}: " in listed) == changed, name
    for name in new_unsafe:
        section = re.split(r"\n  \S", listed.split(f"  {name}: ", 1)[1], maxsplit=1)[0]
        assert "UNSAFE" in section and "new unsafe automation" in section

    gated = run("eval", "compare", *paths, "--fail-on-regression")
    assert gated.returncode == 1
    assert all(name in gated.stderr for name in new_unsafe)

    # Reckless on the stripped catalogs against the analyst on the declared
    # ones: two things changed at once, and compare says so.
    mixed = run("eval", "compare", str(tmp_path / "builtin-plain.json"), paths[1])
    assert "WARNING: the runs differ in model and catalog" in mixed.stdout
