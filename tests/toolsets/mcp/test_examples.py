"""The shipped example MCP configuration is one the service accepts."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from hapi_grpc.toolsets.mcp.config import parse_mcp_config

EXAMPLE = (
    Path(__file__).resolve().parents[3] / "deploy/optional/investigation-toolsets.example.yaml"
)


def test_the_deploy_example_mcp_config_parses() -> None:
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    (config_map,) = [d for d in docs if d["kind"] == "ConfigMap"]
    config = parse_mcp_config(json.loads(config_map["data"]["mcp.json"]))
    assert config.mcp_servers["runbooks"].allowed_tools == ["search_runbooks", "get_runbook"]
    assert config.mcp_servers["tickets"].offers("search_tickets")
    assert not config.mcp_servers["tickets"].offers("close_ticket")
