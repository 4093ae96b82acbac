"""The HAPI_MCP_CONFIG file: the mcpServers convention plus our keys, with clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hapi_grpc.domain.sensitive import redact
from hapi_grpc.toolsets.mcp.config import McpConfigError, load_mcp_config, parse_mcp_config


def test_both_transports_and_our_keys(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "runbooks": {"command": "runbook-mcp", "args": ["-v"], "env": {"A": "b"}},
                    "tickets": {
                        "type": "http",
                        "url": "https://mcp.example.internal/mcp",
                        "headers": {"X-Team": "sre", "X-Api-Key": "k-123456789"},
                        "tokenFile": "/run/token",
                        "allowedTools": ["search"],
                        "deniedTools": ["delete"],
                        "maxCalls": 3,
                        "timeoutSeconds": 5,
                    },
                    "old": {"command": "x", "disabled": True},
                }
            }
        )
    )
    config = load_mcp_config(path)
    assert set(config.enabled()) == {"runbooks", "tickets"}
    tickets = config.mcp_servers["tickets"]
    assert tickets.transport == "http" and config.mcp_servers["runbooks"].transport == "stdio"
    assert tickets.offers("search") and not tickets.offers("delete") and not tickets.offers("x")
    assert tickets.max_calls == 3 and tickets.timeout_seconds == 5
    # A secret-named header's value is hidden from every message from now on.
    assert "k-123456789" not in redact("sent k-123456789")


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ({"command": "x", "allowedtools": ["a"]}, "server 'ops', key 'allowedtools': Extra inputs"),
        ({"command": "x", "url": "http://h/mcp"}, "server 'ops': Value error, give either"),
        ({}, "give either command"),
        ({"url": "ftp://h"}, "server 'ops', key 'url'"),
        ({"command": "x", "maxCalls": 0}, "server 'ops', key 'maxCalls'"),
        ({"url": "http://h/mcp", "headers": {"X-A": "a\nB: c"}}, "line break"),
        ({"command": "x", "tokenFile": "/t"}, "url servers only"),
    ],
)
def test_errors_name_the_server_and_key(server: dict[str, object], message: str) -> None:
    with pytest.raises(McpConfigError) as err:
        parse_mcp_config({"mcpServers": {"ops": server}})
    assert message in str(err.value)


def test_bad_names_and_files(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="no '__'"):
        parse_mcp_config({"mcpServers": {"a__b": {"command": "x"}}})
    with pytest.raises(McpConfigError, match="key 'mcpServers': Field required"):
        parse_mcp_config({"servers": {}})
    with pytest.raises(McpConfigError, match="cannot read"):
        load_mcp_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(McpConfigError, match="not valid JSON"):
        load_mcp_config(tmp_path / "bad.json")


def test_manager_from_settings(tmp_path: Path) -> None:
    from hapi_grpc.toolsets.mcp import McpToolsetSettings
    from hapi_grpc.toolsets.mcp.manager import McpManager

    assert McpManager.from_settings(McpToolsetSettings(mcp_config=None)) is None
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"ops": {"command": "x", "maxcalls": 1}}}')
    with pytest.raises(McpConfigError, match="server 'ops', key 'maxcalls'"):
        McpManager.from_settings(McpToolsetSettings(mcp_config=str(path)))
    path.write_text('{"mcpServers": {"ops": {"command": "x"}}}')
    manager = McpManager.from_settings(McpToolsetSettings(mcp_config=str(path)))
    assert manager is not None and manager.status()["ops"]["available"] is False


def test_untrusted_tool_listings_are_bounded() -> None:
    from types import SimpleNamespace

    from hapi_grpc.toolsets.mcp.config import McpServerConfig
    from hapi_grpc.toolsets.mcp.manager import McpManager
    from hapi_grpc.toolsets.mcp.schemas import MAX_SCHEMA_CHARS

    def tool(name: str, schema: object, description: str = "d") -> SimpleNamespace:
        return SimpleNamespace(name=name, description=description, input_schema=schema)

    listed = [
        tool("ok", {"type": "object", "properties": {"a": {"type": "string"}}}, "x " * 5000),
        tool("huge", {"type": "object", "description": "y" * MAX_SCHEMA_CHARS}),
        tool("invalid", {"type": "no-such-type"}),
        tool("deep", json.loads('{"not":' * 100 + '{"type": "object"}' + "}" * 100)),
        tool("bad name!", {"type": "object"}),
        tool("none", None),
        tool("extra", {"type": "object"}),
    ]
    exposed = McpManager._expose("srv", McpServerConfig(command="x", maxTools=2), listed)
    # Sorted by name, unusable ones skipped, then capped at maxTools.
    assert list(exposed) == ["srv__extra", "srv__none"]
    exposed = McpManager._expose("srv", McpServerConfig(command="x"), listed)
    assert set(exposed) == {"srv__ok", "srv__none", "srv__extra"}
    ok = exposed["srv__ok"][0]
    assert len(ok.description) < 1100
    assert exposed["srv__none"][0].input_schema == {"type": "object"}


def test_tool_schema_patterns_are_matched_in_linear_time() -> None:
    import time
    from types import SimpleNamespace

    from hapi_grpc.toolsets.mcp.config import McpServerConfig
    from hapi_grpc.toolsets.mcp.manager import McpManager

    def tool(name: str, schema: object) -> SimpleNamespace:
        return SimpleNamespace(name=name, description="d", input_schema=schema)

    def strings(**extra: object) -> dict[str, object]:
        return {"type": "object", "properties": {"q": {"type": "string", **extra}}}

    listed = [
        tool("nested", strings(pattern="^(a+)+$")),  # backtracks without end in `re`
        tool("backref", strings(pattern=r"^(a)\1$")),  # not RE2: refused, not run on `re`
        tool("keys", {"type": "object", "patternProperties": {"^(a+)+$": {}}}),
    ]
    exposed = McpManager._expose("srv", McpServerConfig(command="x"), listed)
    assert set(exposed) == {"srv__nested"}
    validator = exposed["srv__nested"][1]
    started = time.monotonic()
    problems = list(validator.iter_errors({"q": "a" * 40 + "!"}))
    assert time.monotonic() - started < 0.5  # `re` takes minutes on this input
    assert [p.message for p in problems] == [f"{'a' * 40 + '!'!r} does not match '^(a+)+$'"]
    assert list(validator.iter_errors({"q": "a" * 40})) == []
