"""Settings from the environment and flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from hapi_grpc.config import ConfigError, Settings


def test_defaults_are_the_embedded_service() -> None:
    s = Settings.from_env({})
    assert (s.grpc_port, s.llm_provider, s.data_storage_url, s.reflection) == (
        50051,
        "builtin",
        None,
        True,
    )


def test_environment_and_flags() -> None:
    env = {
        "HAPI_GRPC_PORT": "6000",
        "HAPI_REFLECTION": "false",
        "HAPI_LLM_PROVIDER": "openai",
        "HAPI_LLM_MODEL": "gpt-x",
        "HAPI_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "HAPI_LLM_EXTRA_QUERY": '{"api-version": "2024-10-21"}',
        "HAPI_TOKENREVIEW_AUDIENCES": "a, b",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
    }
    s = Settings.from_env(env, grpc_port=7000, catalog_file=None)
    assert s.grpc_port == 7000  # the flag wins
    assert s.reflection is False
    assert s.llm_extra_query == {"api-version": "2024-10-21"}
    assert s.tokenreview_audiences == ["a", "b"]
    assert s.otlp_endpoint == "http://collector:4317"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"HAPI_GRPC_PORT": "x"}, "grpc_port"),
        ({"HAPI_REFLECTION": "maybe"}, "HAPI_REFLECTION"),
        ({"HAPI_LLM_PROVIDER": "openai"}, "llm_model"),
        ({"HAPI_TLS_CERT_FILE": "/c.pem"}, "tls_key_file"),
        ({"HAPI_AUTH_MODE": "static"}, "auth_tokens_file"),
        ({"HAPI_LLM_EXTRA_HEADERS": "[1]"}, "HAPI_LLM_EXTRA_HEADERS"),
        ({"HAPI_NOT_A_SETTING": "1", "HAPI_METRICS_PORT": "-5"}, "metrics_port"),
    ],
)
def test_invalid_configuration_names_the_setting(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        Settings.from_env(env)


def test_api_key_from_file_and_never_in_repr(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk-test-SECRET-123\n", encoding="utf-8")
    s = Settings.from_env({"HAPI_LLM_API_KEY_FILE": str(key_file)})
    assert s.resolved_llm_api_key() == "sk-test-SECRET-123"
    inline = Settings.from_env({"HAPI_LLM_API_KEY": "sk-test-SECRET-456"})
    assert "sk-test-SECRET-456" not in repr(inline) + str(inline.model_dump())
    missing = Settings.from_env({"HAPI_LLM_API_KEY_FILE": str(tmp_path / "nope")})
    with pytest.raises(ConfigError, match="llm_api_key_file"):
        missing.resolved_llm_api_key()
