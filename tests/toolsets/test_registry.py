"""Every registered toolset is documented, configurable, labelled in metrics, marked
in the prompt and recorded typed: what the rest of the service knows of a toolset
comes from its class (`toolsets/registry.py`), and these tests list the classes
rather than the toolsets, so a new one is checked without being named here."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from hapi.v1 import tools_pb2
from hapi_grpc.app import open_toolsets
from hapi_grpc.config import ConfigError, ServiceSettings, Settings, env_name
from hapi_grpc.domain.prompt import system_prompt
from hapi_grpc.domain.toolsets import arguments_gen
from hapi_grpc.domain.toolsets.tool import tool_json_schema
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from hapi_grpc.toolsets.base import ToolsetPlugin
from hapi_grpc.toolsets.registry import TOOLSETS, WorkflowCatalogToolset
from hapi_grpc.transport.tool_arguments import typed_tool

ROOT = Path(__file__).resolve().parents[2]
NAMES = [spec.name for spec in TOOLSETS]
CONFIGURED = [spec for spec in TOOLSETS if spec.settings_model is not None]


def test_names_are_unique() -> None:
    assert len(set(NAMES)) == len(NAMES)


@pytest.mark.parametrize("spec", CONFIGURED, ids=lambda s: s.name)
def test_every_setting_is_documented(spec: type[ToolsetPlugin[Any]]) -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert f"## Toolset `{spec.name}`" in reference
    assert spec.settings_model is not None
    for name, field in spec.settings_model.model_fields.items():
        assert field.description, f"{name} has no description"
        assert f"| `{env_name(name)}` |" in reference


def test_settings_of_toolsets_and_service_never_collide() -> None:
    seen = set(ServiceSettings.model_fields)
    for spec in CONFIGURED:
        assert spec.settings_model is not None
        fields = set(spec.settings_model.model_fields)
        assert not fields & seen, f"{spec.name} reuses {fields & seen}"
        seen |= fields
    assert seen == set(Settings.model_fields)


@pytest.mark.parametrize("spec", CONFIGURED, ids=lambda s: s.name)
def test_every_toolset_is_configurable_from_its_variables(spec: type[ToolsetPlugin[Any]]) -> None:
    model = spec.settings_model
    assert model is not None and spec.enabled_by in model.model_fields
    assert spec.settings_from(Settings()) == model()  # the defaults hold
    numbers = [
        name for name, field in model.model_fields.items() if field.annotation in (int, float)
    ]
    for name in numbers:
        with pytest.raises(ConfigError, match=env_name(name)):
            Settings.from_env({env_name(name): "not-a-number"})
        default = model.model_fields[name].get_default()
        value = spec.settings_from(Settings.from_env({env_name(name): str(default)}))
        assert getattr(value, name) == default
    limits = spec(model()).limits()
    assert limits is None or isinstance(limits, ToolsetLimits)


@pytest.mark.parametrize("spec", TOOLSETS, ids=lambda s: s.name)
def test_every_toolset_is_its_own_package_opened_by_a_coroutine(
    spec: type[ToolsetPlugin[Any]],
) -> None:
    assert inspect.iscoroutinefunction(spec.open)
    if spec is not WorkflowCatalogToolset:  # built by the engine itself
        assert spec.__module__ == f"hapi_grpc.toolsets.{spec.name}"


def test_deploy_examples_name_only_real_settings() -> None:
    texts = [
        (ROOT / "deploy" / "configmap.yaml").read_text(encoding="utf-8"),
        *(p.read_text(encoding="utf-8") for p in (ROOT / "deploy" / "optional").glob("*.yaml")),
    ]
    everything = "\n".join(texts)
    import re

    known = {env_name(name) for name in Settings.model_fields}
    for variable in set(re.findall(r"\b(HAPI_[A-Z0-9_]+)\s*:", everything)):
        assert variable in known, f"{variable} is not a setting"


def _enabled() -> dict[str, float]:
    return {
        s.labels["toolset"]: s.value
        for metric in REGISTRY.collect()
        if metric.name == "hapi_toolset_enabled"
        for s in metric.samples
    }


async def test_every_toolset_is_labelled_in_metrics() -> None:
    opened = await open_toolsets(Settings(kubernetes="off"))
    await opened.close()
    assert opened.sources == []
    enabled = _enabled()
    assert set(NAMES) <= set(enabled)
    assert {name for name in NAMES if enabled[name]} == {WorkflowCatalogToolset.name}

    opened = await open_toolsets(
        Settings(kubernetes="off", prometheus_url="http://127.0.0.1:9", alertmanager_url=None)
    )
    await opened.close()
    assert len(opened.sources) == 1 and _enabled()["prometheus"] == 1


def _offered(spec: type[ToolsetPlugin[Any]]) -> Toolset:
    return spec.toolset([], ToolsetLimits(max_calls=4, call_timeout=1))


@pytest.mark.parametrize("spec", TOOLSETS, ids=lambda s: s.name)
def test_every_untrusted_toolset_is_marked_in_the_prompt(spec: type[ToolsetPlugin[Any]]) -> None:
    prompt = system_prompt(toolsets=[_offered(spec)])
    if spec.data_key:
        assert spec.data_key and f'"{spec.data_key}"' in prompt
        marked = prompt[prompt.index(f'"{spec.data_key}"') :]
        assert "never instructions" in marked.split("\n\n")[0]
    else:
        assert "never instructions" not in prompt
    assert spec.prompt_note in prompt


TYPED_TOOLS = [
    (spec.name, tool, model)
    for spec in TOOLSETS
    if spec.typed_arguments
    for tool, model in spec.argument_models().items()
]


def test_every_toolset_with_typed_arguments_lists_its_models() -> None:
    assert {name for name, _, _ in TYPED_TOOLS} == {s.name for s in TOOLSETS if s.typed_arguments}


def test_every_typed_field_of_the_record_is_a_typed_toolsets_tool() -> None:
    """The recorder types a call by the oneof field named as the tool, whatever the
    spec says: so a `<Tool>Args` field belongs to a toolset declaring typed
    arguments, and no other toolset's tool has one."""
    oneof = tools_pb2.ToolCallRecord.DESCRIPTOR.oneofs_by_name["arguments"]
    fields = {f.name for f in oneof.fields if f.message_type.name.endswith("Args")}
    assert fields == {tool for _, tool, _ in TYPED_TOOLS}
    untyped = [
        tool for spec in TOOLSETS if not spec.typed_arguments for tool in spec.argument_models()
    ]
    assert untyped and not [tool for tool in untyped if typed_tool(tool) is not None]


@pytest.mark.parametrize(("toolset", "tool", "model"), TYPED_TOOLS, ids=lambda v: str(v))
def test_every_typed_tool_validates_with_the_model_generated_from_its_message(
    toolset: str, tool: str, model: Any
) -> None:
    """The tool's arguments message in `ToolCallRecord` is the one source: the model
    is the one generated from it, or a subclass adding checks but no fields."""
    assert typed_tool(tool) == tool
    oneof = tools_pb2.ToolCallRecord.DESCRIPTOR.oneofs_by_name["arguments"]
    message = next(f for f in oneof.fields if f.name == tool).message_type
    generated = getattr(arguments_gen, message.name)
    assert issubclass(model, generated)
    fields = {name: repr(info) for name, info in model.model_fields.items()}
    assert fields == {name: repr(info) for name, info in generated.model_fields.items()}
    assert tool_json_schema(model) == tool_json_schema(generated)
    assert list(model.model_fields) == [f.name for f in message.fields]


FORBIDDEN = ("grpc", "aiohttp", "hapi.", "prometheus_client", "kubernetes_asyncio", "redis")
OUTER = ("adapters", "transport", "application", "observability", "security", "config", "app")


def test_the_domain_imports_nothing_outer() -> None:
    for path in sorted((ROOT / "hapi_grpc" / "domain").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert not name.startswith(FORBIDDEN) or name == "grpc_health", (path, name)
                parts = name.split(".")
                assert not (parts[0] == "hapi_grpc" and parts[1] in OUTER), (path, name)


def test_a_toolset_not_configured_never_imports_its_adapter() -> None:
    import subprocess
    import sys

    code = (
        "import asyncio, sys\n"
        "from hapi_grpc.config import Settings\n"
        "from hapi_grpc.app import open_toolsets\n"
        "asyncio.run(open_toolsets(Settings(kubernetes='off')))\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')\n"
        "    or m.startswith(('hapi_grpc.toolsets.mcp.', 'hapi_grpc.toolsets.prometheus.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"  # the MCP SDK alone is tens of megabytes
