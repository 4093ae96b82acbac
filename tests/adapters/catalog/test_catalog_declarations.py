"""Declared preconditions and invariants: every state-changing workflow has them, they
compile when the catalog loads, and they travel over the Data Storage contract."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hapi_grpc.adapters.catalog.loader import (
    CatalogFileError,
    load_bundled_catalog,
    load_catalog_file,
)
from hapi_grpc.domain.catalog import Workflow
from hapi_grpc.domain.quantity import QuantityError, parse_quantity

DEPLOYED = Path(__file__).resolve().parents[3] / "deploy" / "catalog.yaml"


def _entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "workflow_id": "scale-v1",
        "version": "1.0.0",
        "title": "Scale deployment",
        "signal_type": "HighRequestLatency",
        "parameters": [{"name": "REPLICA_COUNT", "type": "integer", "required": True}],
        "preconditions": [
            {"name": "deployment_read", "expression": "observed.workloads.size() > 0"}
        ],
    }
    entry.update(changes)
    return entry


def _write(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump({"workflows": entries}), encoding="utf-8")
    return path


@pytest.mark.parametrize("catalog", ["bundled", "deploy"])
def test_every_state_changing_workflow_declares_preconditions(catalog: str) -> None:
    workflows = load_bundled_catalog() if catalog == "bundled" else load_catalog_file(DEPLOYED)
    undeclared = [w.workflow_id for w in workflows if not w.read_only and not w.preconditions]
    assert undeclared == [], f"state-changing workflows without preconditions: {undeclared}"
    assert any(w.read_only for w in workflows)
    # Workflows with parameters also say how those relate to what was observed.
    unbound = [
        w.workflow_id for w in workflows if not w.read_only and w.parameters and not w.invariants
    ]
    assert unbound == [], f"state-changing workflows without invariants: {unbound}"


def test_read_only_is_a_field_not_a_word_in_the_description(tmp_path: Path) -> None:
    described = _entry(description="Read-only. Changes nothing.", preconditions=[])
    (workflow,) = load_catalog_file(_write(tmp_path, [described]))
    assert workflow.read_only is False
    (flagged,) = load_catalog_file(_write(tmp_path, [_entry(read_only=True)]))
    assert flagged.read_only is True


@pytest.mark.parametrize(
    "expression",
    [
        "observed.pods.exists(p,",  # syntax
        "frobnicate(observed)",  # undeclared function
        "quantity(1) > 0.0",  # no such overload: quantity takes a string
        '1 + "a" == 2',  # type error
    ],
)
def test_a_bad_expression_fails_the_load_naming_the_workflow(
    tmp_path: Path, expression: str
) -> None:
    bad = _entry(
        workflow_id="broken-v1",
        invariants=[{"name": "bad_rule", "expression": expression}],
    )
    with pytest.raises(CatalogFileError) as failed:
        load_catalog_file(_write(tmp_path, [_entry(), bad]))
    message = str(failed.value)
    assert "broken-v1" in message and "invariants" in message and "CEL" in message


def test_declarations_round_trip_the_data_storage_json() -> None:
    for workflow in load_bundled_catalog():
        again = Workflow.model_validate(workflow.model_dump(mode="json"))
        assert again.preconditions == workflow.preconditions
        assert again.invariants == workflow.invariants
        assert again.read_only == workflow.read_only


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2G", 2_000_000_000),
        ("1.5Gi", 1_610_612_736),
        ("1048576Ki", 1_073_741_824),
        ("1500M", 1_500_000_000),
        ("512Mi", 536_870_912),
        ("2e9", 2_000_000_000),
        ("100m", 1),  # 0.1 rounded up to a whole byte
    ],
)
def test_memory_quantities_in_every_notation(text: str, expected: int) -> None:
    assert math.ceil(parse_quantity(text)) == expected  # whole bytes, rounded up


def test_cpu_quantities_and_garbage() -> None:
    assert parse_quantity("500m") == parse_quantity("0.5")
    for bad in ("", "1.5.Gi", "lots", "12 Mi"):
        with pytest.raises(QuantityError):
            parse_quantity(bad)


def test_the_strings_extension_loads_only_for_an_expression_that_uses_it(
    tmp_path: Path,
) -> None:
    # Its native library holds ~3.5 MB: the bundled catalog and premise packs do
    # without it, and a catalog that uses it (it is part of the documented language)
    # still loads.
    joined = _entry(
        workflow_id="joined-v1",
        invariants=[
            {
                "name": "joined",
                "expression": 'observed.workloads.map(w, w.name).join(",") != ""',
                "show": 'observed.workloads.map(w, w.name).join(",")',
            }
        ],
    )
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from hapi_grpc.adapters.catalog.loader import load_bundled_catalog, load_catalog_file\n"
        "from hapi_grpc.domain.preconditions import Bound, evaluate\n"
        "from hapi_grpc.domain.premises import bundled_book\n"
        "load_bundled_catalog()\n"
        "bundled_book()\n"
        "print('ext_strings' in ' '.join(sys.modules))\n"
        "(w,) = load_catalog_file(Path(sys.argv[1]))\n"
        "observed = {'workloads': [{'name': 'a'}, {'name': 'b'}]}\n"
        "(r,) = evaluate((), [c.declared() for c in w.invariants], Bound({}, observed, {}))\n"
        "print('ext_strings' in ' '.join(sys.modules), r.holds)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(_write(tmp_path, [joined]))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]
