"""The configuration reference is generated from `Settings` and kept current; the
README links every guide in docs/."""

from __future__ import annotations

from pathlib import Path

from hapi_grpc.config import ServiceSettings
from hapi_grpc.config_reference import render

ROOT = Path(__file__).resolve().parent.parent


def test_committed_configuration_reference_is_current() -> None:
    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == render(), (
        "docs/configuration.md is stale: run "
        "`.venv/bin/python -m hapi_grpc.config_reference > docs/configuration.md`"
    )


def test_every_setting_has_a_description() -> None:
    fields = ServiceSettings.model_fields  # toolsets: tests/toolsets/test_registry.py
    undocumented = [name for name, field in fields.items() if not (field.description or "").strip()]
    assert undocumented == [], "settings without a description"


def test_reference_lists_each_variable_with_its_default() -> None:
    text = render()
    assert "| `HAPI_GRPC_PORT` | `50051` |" in text
    assert "| `OTEL_EXPORTER_OTLP_ENDPOINT` | — |" in text
    assert "| `HAPI_KUBERNETES` | `auto` |" in text


def test_readme_links_every_guide_in_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for guide in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{guide.name})" in readme, f"README does not link docs/{guide.name}"
