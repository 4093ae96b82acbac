"""Settings from the environment and flags."""

from __future__ import annotations

import re
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
        ({"HAPI_GRPC_PORT": "x"}, "HAPI_GRPC_PORT: Input should be a valid integer"),
        ({"HAPI_REFLECTION": "maybe"}, "HAPI_REFLECTION: must be true or false"),
        ({"HAPI_LLM_PROVIDER": "openai"}, "HAPI_LLM_MODEL"),
        ({"HAPI_LLM_PROVIDER": "gemini"}, "HAPI_LLM_PROVIDER: Input should be 'builtin'"),
        ({"HAPI_TLS_CERT_FILE": "/c.pem"}, "HAPI_TLS_KEY_FILE"),
        ({"HAPI_AUTH_MODE": "static"}, "HAPI_AUTH_TOKENS_FILE"),
        ({"HAPI_LLM_EXTRA_HEADERS": "[1]"}, "HAPI_LLM_EXTRA_HEADERS: must be a JSON object"),
        ({"HAPI_NOT_A_SETTING": "1", "HAPI_METRICS_PORT": "-5"}, "HAPI_METRICS_PORT"),
        ({"HAPI_LLM_MAX_CONCURRENT_REQUESTS": "0"}, "HAPI_LLM_MAX_CONCURRENT_REQUESTS"),
        ({"HAPI_DATA_STORAGE_MAX_CONNECTIONS": "-1"}, "HAPI_DATA_STORAGE_MAX_CONNECTIONS"),
        ({"HAPI_KUBERNETES": "maybe"}, "HAPI_KUBERNETES: Input should be 'auto', 'on' or 'off'"),
        ({"HAPI_KUBERNETES_MAX_CALLS": "201"}, "HAPI_KUBERNETES_MAX_CALLS: Input should be less"),
        ({"HAPI_KUBERNETES_CALL_TIMEOUT": "0"}, "HAPI_KUBERNETES_CALL_TIMEOUT: Input should be"),
    ],
)
def test_invalid_configuration_names_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)) as caught:
        Settings.from_env(env)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("HAPI_DATA_STORAGE_URL", "ftp://ds:8080", "http:// or https://"),
        ("HAPI_LLM_BASE_URL", "ftp://llm/v1", "http:// or https://"),
        ("HAPI_LLM_BASE_URL", "http:///v1", "http:// or https://"),
        ("HAPI_LLM_BASE_URL", "api.openai.com/v1", "http:// or https://"),
        ("HAPI_CACHE_URL", "http://redis:6379", "memory://, redis:// or rediss://"),
        ("HAPI_CACHE_URL", "redis://", "memory://, redis:// or rediss://"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317", "http:// or https://"),
        ("HAPI_TOKENREVIEW_API_URL", "http://kubernetes", "https://"),
        ("HAPI_PROMETHEUS_URL", "ftp://prometheus:9090", "http:// or https://"),
        ("HAPI_ALERTMANAGER_URL", "alertmanager:9093", "http:// or https://"),
    ],
)
def test_every_url_setting_is_checked(name: str, value: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({name: value})
    message = str(caught.value)
    assert f"{name}: must be a URL with scheme {allowed} and a host" in message


def test_urls_never_echo_credentials() -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"HAPI_CACHE_URL": "http://:s3cr3t@redis:6379"})
    assert "s3cr3t" not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HAPI_DATA_STORAGE_URL", "https://ds.example:8443/base"),
        ("HAPI_LLM_BASE_URL", "http://[::1]:11434/v1"),
        ("HAPI_CACHE_URL", "rediss://:pw@redis:6380/1"),
        ("HAPI_CACHE_URL", "memory://"),
    ],
)
def test_good_urls_are_accepted(name: str, value: str) -> None:
    Settings.from_env({name: value})


def test_unreadable_files_name_their_variable(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.pem")
    settings = Settings.from_env({"HAPI_TLS_CERT_FILE": missing, "HAPI_TLS_KEY_FILE": missing})
    with pytest.raises(ConfigError, match=r"HAPI_TLS_CERT_FILE: cannot read .*missing\.pem"):
        settings.check_files()
    # Files of features that are off are not read.
    Settings.from_env({"HAPI_AUTH_TOKENS_FILE": missing}).check_files()


@pytest.mark.parametrize("url", ["HAPI_PROMETHEUS_URL", "HAPI_ALERTMANAGER_URL"])
def test_the_metrics_credentials_are_read_for_either_metrics_toolset(
    tmp_path: Path, url: str
) -> None:
    """Alertmanager is reached with the prometheus toolset's token file and CA bundle."""
    missing = str(tmp_path / "missing-token")
    settings = Settings.from_env(
        {url: "http://metrics:9090", "HAPI_PROMETHEUS_TOKEN_FILE": missing}
    )
    with pytest.raises(ConfigError, match=r"HAPI_PROMETHEUS_TOKEN_FILE: cannot read"):
        settings.check_files()
    Settings.from_env({"HAPI_PROMETHEUS_TOKEN_FILE": missing}).check_files()  # neither is on


def test_api_key_from_file_and_never_in_repr(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk-test-SECRET-123\n", encoding="utf-8")
    s = Settings.from_env({"HAPI_LLM_API_KEY_FILE": str(key_file)})
    assert s.resolved_llm_api_key() == "sk-test-SECRET-123"
    inline = Settings.from_env({"HAPI_LLM_API_KEY": "sk-test-SECRET-456"})
    assert "sk-test-SECRET-456" not in repr(inline) + str(inline.model_dump())
    missing = Settings.from_env({"HAPI_LLM_API_KEY_FILE": str(tmp_path / "nope")})
    with pytest.raises(ConfigError, match="HAPI_LLM_API_KEY_FILE"):
        missing.resolved_llm_api_key()
