"""The tools' argument models are generated from tools.proto: the committed module
is what the proto generates, a rule written in the proto reaches the JSON Schema
the model is shown and the validation, and proto3 semantics hold (a blank
optional string is unset)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import ValidationError

from hapi_grpc.domain.catalog import MIN_SCORE_DEFAULT, TOP_K_DEFAULT, TOP_K_MAX
from hapi_grpc.domain.toolsets import arguments_gen
from hapi_grpc.domain.toolsets.tool import tool_json_schema
from hapi_grpc.toolsets.alertmanager.tools import AlertmanagerActiveAlertsArgs
from hapi_grpc.toolsets.kubernetes.args import KubernetesOwnerChainArgs
from hapi_grpc.toolsets.prometheus.tools import PrometheusRangeQueryArgs

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "hapi_grpc/domain/toolsets/arguments_gen.py"


def _generate(protos: Path, out: Path) -> Path:
    """Runs protoc and the generator as `make generate` does; returns the module."""
    descriptors = out / "tools.binpb"
    subprocess.run(
        [
            sys.executable, "-m", "grpc_tools.protoc", f"-I{protos}",
            f"-I{ROOT / 'third_party/protovalidate'}", "--include_source_info",
            f"--descriptor_set_out={descriptors}", str(protos / "hapi/v1/tools.proto"),
        ],
        check=True,
    )  # fmt: skip
    module = out / "arguments_gen.py"
    generator = ROOT / "scripts/gen_tool_args.py"
    generated = ROOT / "generated/python"
    subprocess.run([sys.executable, generator, descriptors, generated, module], check=True)
    ruff = [sys.executable, "-m", "ruff", "format", "-q", "--config", ROOT / "pyproject.toml"]
    subprocess.run([*ruff, module], check=True)
    return module


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("fresh_arguments_gen", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the annotations in it
    spec.loader.exec_module(module)
    return module


def test_the_committed_models_are_what_tools_proto_generates(tmp_path: Path) -> None:
    fresh = _generate(ROOT / "protos", tmp_path)
    assert fresh.read_text() == COMMITTED.read_text(), "run `make generate` and commit"


def test_a_bound_written_in_tools_proto_reaches_the_schema_and_the_validation(
    tmp_path: Path,
) -> None:
    protos = tmp_path / "protos"
    (protos / "hapi/v1").mkdir(parents=True)
    text = (ROOT / "protos/hapi/v1/tools.proto").read_text()
    bound = (
        "  // Maximum objects, 1-100. Default 30.\n"
        "  optional int32 limit = 5 [(buf.validate.field).int32 = {\n"
        "    gte: 1\n"
        "    lte: 100\n"
    )
    assert bound in text
    changed = bound.replace("Default 30", "Default 7").replace("lte: 100", "lte: 77")
    (protos / "hapi/v1/tools.proto").write_text(text.replace(bound, changed))
    out = tmp_path / "out"
    out.mkdir()
    module = _load(_generate(protos, out))

    limit = tool_json_schema(module.KubernetesListArgs)["properties"]["limit"]
    assert (limit["maximum"], limit["default"]) == (77, 7)
    assert "Default 7." in limit["description"]
    with pytest.raises(ValidationError):
        module.KubernetesListArgs.model_validate({"kind": "Pod", "limit": 78})
    # The committed models still say what the committed proto says.
    assert (
        tool_json_schema(arguments_gen.KubernetesListArgs)["properties"]["limit"]["maximum"] == 100
    )


def test_a_rule_the_generator_does_not_map_stops_generation(tmp_path: Path) -> None:
    protos = tmp_path / "protos"
    (protos / "hapi/v1").mkdir(parents=True)
    text = (ROOT / "protos/hapi/v1/tools.proto").read_text()
    rule = "  string filter = 6 [(buf.validate.field).string.max_len = 256];\n"
    assert rule in text
    unmapped = rule.replace("string.max_len = 256", 'string.prefix = "x"')
    (protos / "hapi/v1/tools.proto").write_text(text.replace(rule, unmapped))
    with pytest.raises(subprocess.CalledProcessError):
        _generate(protos, tmp_path)


def test_a_default_the_generator_cannot_type_stops_generation(tmp_path: Path) -> None:
    """A bool's "Default true." would otherwise become the string "true"."""
    protos = tmp_path / "protos"
    (protos / "hapi/v1").mkdir(parents=True)
    text = (ROOT / "protos/hapi/v1/tools.proto").read_text()
    field = "  // The previous (crashed) container instance.\n  bool previous = 4;\n"
    assert field in text
    defaulted = field.replace("instance.", "instance. Default true.")
    (protos / "hapi/v1/tools.proto").write_text(text.replace(field, defaulted))
    with pytest.raises(subprocess.CalledProcessError):
        _generate(protos, tmp_path)


def test_a_blank_optional_string_is_unset_and_takes_its_default() -> None:
    assert KubernetesOwnerChainArgs.model_validate({"name": "api-1", "kind": " "}).kind == "Pod"
    assert PrometheusRangeQueryArgs.model_validate({"query": "up", "range": ""}).range == "1h"
    assert AlertmanagerActiveAlertsArgs.model_validate({"namespace": ""}).namespace is None


def test_map_keys_are_checked_without_pattern_properties_in_the_schema() -> None:
    labels = tool_json_schema(AlertmanagerActiveAlertsArgs)["properties"]["labels"]
    assert "patternProperties" not in labels
    assert labels["additionalProperties"] == {"type": "string", "maxLength": 256}
    with pytest.raises(ValidationError, match="pattern"):
        AlertmanagerActiveAlertsArgs.model_validate({"labels": {"not-a-label": "x"}})
    with pytest.raises(ValidationError):
        AlertmanagerActiveAlertsArgs.model_validate({"labels": {"service": "x" * 257}})


def test_the_search_defaults_are_the_catalogs() -> None:
    fields = arguments_gen.SearchWorkflowCatalogArgs.model_fields
    assert fields["limit"].default == TOP_K_DEFAULT
    assert fields["similarity_threshold"].default == MIN_SCORE_DEFAULT
    schema = tool_json_schema(arguments_gen.SearchWorkflowCatalogArgs)
    assert schema["properties"]["limit"]["maximum"] == TOP_K_MAX
