"""Catalog file loading: formats, the bundled catalog, and every rejection."""

from __future__ import annotations

import copy
import json
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
from tests.fakes.serve_process import ServeProcess


def _workflow(workflow_id: str = "scale-v1", **changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "workflow_id": workflow_id,
        "version": "1.0.0",
        "title": "Scale deployment",
        "description": "Scale a deployment",
        "signal_type": "HighRequestLatency",
        "parameters": [
            {"name": "NAMESPACE", "type": "string", "required": True, "max_length": 63},
            {"name": "REPLICA_COUNT", "type": "integer", "minimum": 1, "maximum": 10},
        ],
    }
    entry.update(changes)
    return entry


def _write(tmp_path: Path, content: Any, name: str = "catalog.yaml") -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    elif name.endswith(".json"):
        path.write_text(json.dumps(content), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return path


def _with_param(index: int, **changes: Any) -> list[dict[str, Any]]:
    entry = _workflow()
    params = copy.deepcopy(entry["parameters"])
    params[index].update(changes)
    return [_workflow("ok-v1"), _workflow(parameters=params)]


# ------------------------------------------------------------------ happy paths


def test_bundled_catalog_loads_the_required_workflows() -> None:
    workflows = load_bundled_catalog()
    by_id = {w.workflow_id: w for w in workflows}
    assert len(by_id) >= 15
    signals = {w.signal_type for w in workflows}
    assert {
        "OOMKilled",
        "CrashLoopBackOff",
        "NodeNotReady",
        "ImagePullBackOff",
        "CertificateNotReady",
        "NodeDiskPressure",
        "HighCPUThrottling",
        "HPAMaxedOut",
    } <= signals

    oom = by_id["oomkill-increase-memory-v1"]
    params = {p.name: p for p in oom.parameters}
    assert set(params) == {"NAMESPACE", "DEPLOYMENT_NAME", "CONTAINER_NAME", "MEMORY_LIMIT_NEW"}
    assert params["CONTAINER_NAME"].required is False
    memory = params["MEMORY_LIMIT_NEW"]
    assert (memory.type, memory.pattern, memory.default) == (
        "string",
        "^[0-9]+(Ki|Mi|Gi|Ti)$",
        "512Mi",
    )

    cert = by_id["fix-certificate-gitops-v1"]
    assert [p.name for p in cert.parameters] == ["TARGET_NAMESPACE", "TARGET_RESOURCE_NAME"]
    assert cert.labels.detected_labels == {"gitOpsManaged": True}

    drain = {p.name: p for p in by_id["node-drain-reboot-v1"].parameters}
    assert (drain["DRAIN_TIMEOUT_SECONDS"].minimum, drain["DRAIN_TIMEOUT_SECONDS"].maximum) == (
        30,
        600,
    )
    assert any(p.type == "boolean" for p in drain.values())

    enums = {p.name: p.enum for w in workflows for p in w.parameters if p.enum}
    assert enums["RESTART_POLICY"] == ("Always", "OnFailure", "Never")
    assert any(not w.parameters for w in workflows)
    hpa = {p.name: p for p in by_id["adjust-hpa-limits-v1"].parameters}
    assert hpa["MIN_REPLICAS"].depends_on == ("MAX_REPLICAS",)
    assert any(p.type == "float" for w in workflows for p in w.parameters)
    assert any(w.labels.custom_labels for w in workflows)


def test_bundled_signal_labels_follow_the_signal_type() -> None:
    for workflow in load_bundled_catalog():
        assert workflow.labels.signal_type == workflow.signal_type, workflow.workflow_id


@pytest.mark.parametrize("shape", ["list", "mapping"])
@pytest.mark.parametrize("name", ["c.yaml", "c.yml", "c.json"])
def test_loads_list_or_workflows_mapping_in_yaml_and_json(
    tmp_path: Path, shape: str, name: str
) -> None:
    entries = [_workflow("a-v1"), _workflow("b-v1", parameters=None)]
    path = _write(tmp_path, entries if shape == "list" else {"workflows": entries}, name)
    workflows = load_catalog_file(str(path))
    assert [w.workflow_id for w in workflows] == ["a-v1", "b-v1"]
    assert all(isinstance(w, Workflow) for w in workflows)
    assert workflows[1].parameters == ()


def test_bundled_catalog_round_trips_through_json(tmp_path: Path) -> None:
    workflows = load_bundled_catalog()
    records = [w.model_dump(mode="json", exclude_none=True) for w in workflows]
    path = _write(tmp_path, {"workflows": records}, "round-trip.json")
    assert load_catalog_file(path) == workflows


def test_label_signal_type_defaults_to_signal_type(tmp_path: Path) -> None:
    [workflow] = load_catalog_file(_write(tmp_path, [_workflow()]))
    assert workflow.labels.signal_type == "HighRequestLatency"
    assert workflow.labels.severity == "*"

    only_label = _workflow(labels={"signal_type": "OOMKilled"})
    del only_label["signal_type"]
    [workflow] = load_catalog_file(_write(tmp_path, [only_label]))
    assert workflow.signal_type == "OOMKilled"


# ------------------------------------------------------------------- rejections


REJECTIONS: list[tuple[str, Any, str]] = [
    (
        "wrong parameter type",
        _with_param(1, type="int"),
        "entry #1 (scale-v1): parameters.1.type: Input should be 'string', 'integer'",
    ),
    (
        "missing title",
        [{k: v for k, v in _workflow().items() if k != "title"}],
        "entry #0 (scale-v1): title: Field required",
    ),
    ("entry is not a mapping", [_workflow(), "oops"], "entry #1: expected a mapping, got str"),
    (
        "duplicate id and version",
        [_workflow(), _workflow("other-v1"), _workflow()],
        "entry #2 (scale-v1): duplicate of entry #0 (same workflow_id and version '1.0.0')",
    ),
    (
        "versions that compare equal",
        [_workflow(), _workflow(version="1.0")],
        "entry #1 (scale-v1): duplicate of entry #0",
    ),
    (
        "unsafe workflow id",
        [_workflow("../admin")],
        "entry #0 (../admin): workflow_id '../admin' is not a safe identifier",
    ),
    (
        "workflow id with a space",
        [_workflow("scale v1")],
        "entry #0 (scale v1): workflow_id 'scale v1' is not a safe identifier",
    ),
    (
        "duplicate parameter name",
        _with_param(1, name="NAMESPACE"),
        "entry #1 (scale-v1): parameters.1 (NAMESPACE): duplicate parameter name",
    ),
    (
        "minimum above maximum",
        _with_param(1, minimum=11),
        "entry #1 (scale-v1): parameters.1 (REPLICA_COUNT): minimum 11 is greater than maximum 10",
    ),
    (
        "min_length above max_length",
        _with_param(0, min_length=64),
        "parameters.0 (NAMESPACE): min_length 64 is greater than max_length 63",
    ),
    (
        "negative max_length",
        _with_param(0, max_length=-1),
        "entry #1 (scale-v1): parameters.0.max_length: Input should be greater than or equal to 0",
    ),
    (
        "depends_on an undeclared parameter",
        _with_param(1, depends_on=["MAX_REPLICAS"]),
        "parameters.1 (REPLICA_COUNT): depends_on names undeclared parameter 'MAX_REPLICAS'",
    ),
    (
        "depends_on itself",
        _with_param(1, depends_on=["REPLICA_COUNT"]),
        "parameters.1 (REPLICA_COUNT): depends_on names the parameter itself",
    ),
    (
        "enum default not in the enum",
        _with_param(0, enum=["Always", "Never"], default="always", max_length=None),
        "parameters.0 (NAMESPACE): default 'always' is not one of the enum values",
    ),
    (
        "default of the wrong type",
        _with_param(1, default="3"),
        "parameters.1 (REPLICA_COUNT): default '3' is not of type 'integer'",
    ),
    (
        "default out of range",
        _with_param(1, default=20),
        "parameters.1 (REPLICA_COUNT): default 20 is above maximum 10",
    ),
    (
        "default not matching its pattern",
        _with_param(0, pattern="^[0-9]+(Mi|Gi)$", default="2 gigabytes"),
        "default '2 gigabytes' does not match pattern",
    ),
    (
        "pattern RE2 cannot compile",
        _with_param(0, pattern="^(a)\\1$"),
        "parameters.0 (NAMESPACE): pattern '^(a)\\\\1$' is not a valid RE2 expression",
    ),
    (
        "pattern longer than the validator accepts",
        _with_param(0, pattern="^" + "a" * 600 + "$"),
        "parameters.0 (NAMESPACE): pattern is longer than 512 characters",
    ),
    (
        "pattern too big for RE2's memory bound",
        _with_param(0, pattern="^((a{1,100}){1,100}){1,100}$"),
        "parameters.0 (NAMESPACE): pattern '^((a{1,100}){1,100}){1,100}$' is not a valid RE2",
    ),
    (
        "bounds on a string",
        _with_param(0, minimum=1),
        "parameters.0 (NAMESPACE): minimum/maximum apply to numbers, not to type 'string'",
    ),
    (
        "pattern on an integer",
        _with_param(1, pattern="^[0-9]$"),
        "parameters.1 (REPLICA_COUNT): pattern/min_length/max_length apply to strings",
    ),
    (
        "parameter name not UPPER_SNAKE_CASE",
        _with_param(0, name="namespace"),
        "parameters.0 (namespace): name must be UPPER_SNAKE_CASE",
    ),
    (
        "enum value of the wrong type",
        _with_param(1, enum=[1, "2"]),
        "parameters.1 (REPLICA_COUNT): enum value '2' is not of type 'integer'",
    ),
    (
        "signal label contradicting signal_type",
        [_workflow(labels={"signal_type": "OOMKilled"})],
        "entry #0 (scale-v1): signal_type 'HighRequestLatency' differs from labels.signal_type",
    ),
    (
        "success rate above one",
        [_workflow(success_rate=1.5)],
        "entry #0 (scale-v1): success_rate 1.5 is outside [0, 1]",
    ),
    (
        "estimated risk outside the enum",
        [_workflow(estimated_risk="extreme")],
        "entry #0 (scale-v1): estimated_risk: Input should be 'low', 'medium' or 'high'",
    ),
    ("empty list", [], "catalog is empty"),
    ("empty workflows key", {"workflows": []}, "catalog is empty"),
    ("empty file", "", "catalog is empty"),
    ("mapping without workflows", {"items": []}, "with a 'workflows' key"),
    ("scalar document", "42\n", "expected a list of workflows or a mapping"),
    ("unparseable YAML", "workflows: [\n  - {a: 1\n", "not valid YAML:"),
]


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(content, expected, id=name) for name, content, expected in REJECTIONS],
)
def test_malformed_catalog_is_rejected_with_file_entry_and_problem(
    tmp_path: Path, content: Any, expected: str
) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(CatalogFileError) as caught:
        load_catalog_file(path)
    message = str(caught.value)
    assert message.startswith(f"catalog {path}: ")
    assert expected in message
    assert isinstance(caught.value, ValueError)


def test_unparseable_json_names_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"workflows": [\n  {"workflow_id": }\n]}', "c.json")
    with pytest.raises(CatalogFileError, match=r"not valid JSON: Expecting value at line 2"):
        load_catalog_file(path)


def test_unparseable_yaml_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "workflows:\n  - workflow_id: a\n   bad: [\n")
    with pytest.raises(CatalogFileError, match=r"not valid YAML: .* at line \d+ column \d+"):
        load_catalog_file(path)


def test_unsupported_extension_and_missing_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "[]", "catalog.txt")
    with pytest.raises(CatalogFileError, match=r"unsupported file extension '\.txt'"):
        load_catalog_file(path)
    missing = tmp_path / "absent.yaml"
    with pytest.raises(CatalogFileError, match=rf"catalog {missing}: cannot read file"):
        load_catalog_file(missing)


def test_every_problem_is_reported(tmp_path: Path) -> None:
    entries = [_workflow("../a"), _workflow(), _workflow(title=None)]
    path = _write(tmp_path, entries)
    with pytest.raises(CatalogFileError) as caught:
        load_catalog_file(path)
    problems = caught.value.problems
    assert len(problems) == 2
    assert problems[0].startswith("entry #2 (scale-v1): title: Input should be a valid string")
    assert problems[1].startswith("entry #0 (../a): workflow_id")
    assert caught.value.source == str(path)


def test_pydantic_errors_are_summarised_per_entry(tmp_path: Path) -> None:
    params = [{"name": f"P{i}", "type": "bogus"} for i in range(5)]
    path = _write(tmp_path, [_workflow(parameters=params)])
    with pytest.raises(CatalogFileError) as caught:
        load_catalog_file(path)
    message = str(caught.value)
    assert "parameters.0.type: Input should be" in message
    assert "parameters.2.type" in message
    assert "parameters.3.type" not in message
    assert message.endswith("(+2 more)")


# Nine levels of nine: 387,420,489 strings in 400 bytes, under a parameter's enum,
# which a refusal quotes (before it was bounded: a 312 MB message, 940 MB resident).
ALIAS_BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


def _bomb_catalog() -> str:
    workflow = _workflow(parameters=[{"name": "MODE", "type": "string", "enum": "BOMB"}])
    return ALIAS_BOMB + yaml.safe_dump({"workflows": [workflow]}).replace("BOMB", "*i")


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("deep.yaml", "workflows: " + "[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
        ("deep.json", '{"workflows": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than 64"),
        ("bomb.yaml", _bomb_catalog(), "aliases expand to more than"),
    ],
)
def test_serve_refuses_a_deep_or_alias_bomb_catalog_with_one_line(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    serve = ServeProcess(HAPI_CATALOG_FILE=str(path), HAPI_KUBERNETES="off")
    assert serve.run_refused(timeout=30) == 2, serve.log()[-2000:]
    log = serve.log().strip()
    assert log.splitlines()[-1].startswith("hapi-grpc: HAPI_CATALOG_FILE: catalog ")
    assert problem in log and "Traceback" not in log and len(log) < 1000


def test_anchors_and_aliases_within_the_bound_still_load(tmp_path: Path) -> None:
    shared = "x-params: &params\n  - {name: NAMESPACE, type: string, required: true}\n"
    entry = _workflow(parameters="PARAMS")
    text = shared + yaml.safe_dump({"workflows": [entry]}).replace("PARAMS", "*params")
    (workflow,) = load_catalog_file(_write(tmp_path, text))
    assert [p.name for p in workflow.parameters] == ["NAMESPACE"]
