"""A full run through the real server with JSON logs at DEBUG: the configured
secrets, bearer tokens and secret-looking parameter values appear nowhere in
the logs, while the investigation's own records carry its ids."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from hapi.v1 import service_pb2
from hapi_grpc.observability.logging import configure_logging
from tests.fakes.investigation import bundled_catalog
from tests.fakes.scripted_llm import ScriptedLLMServer, Step
from tests.helpers.grpc_server import running_server

# Not shaped like anything the patterns know: only registration hides it.
API_KEY = "opaque-provider-credential-93b1d07c55e2"
CLIENT_TOKEN = "client-token-4f8a2c71d9"
WRONG_TOKEN = "guessed-token-0c3e9b5a17"
PASSWORD_VALUE = "hunter2-db-password-value"
OOM_ID = "oomkill-increase-memory-v1"
PARAMS = {"NAMESPACE": "payments", "DEPLOYMENT_NAME": "payment-api", "MEMORY_LIMIT_NEW": "1Gi"}


def _answer() -> str:
    return json.dumps(
        {
            "analysis_summary": "payment-api is OOMKilled repeatedly",
            "root_cause_assessment": "the memory limit is below the working set",
            "rca_severity": "critical",
            "selected_workflow": {
                "workflow_id": OOM_ID,
                "version": "1.0.0",
                "confidence": 0.9,
                "rationale": "memory grows steadily to the limit",
                "estimated_risk": "low",
                "parameters": PARAMS,
            },
            "alternative_workflows": [],
            "warnings": [],
        }
    )


def _script(request: dict[str, Any]) -> list[Step]:
    if "CrashLoopBackOff" in json.dumps(request["messages"]):
        # A provider that quotes the key back in its error message.
        return [Step.error(401, f"Incorrect API key provided: {API_KEY}")]
    with_password = {**PARAMS, "DB_PASSWORD": PASSWORD_VALUE}
    return [
        Step.tool_calls([("search_workflow_catalog", {"query": "OOMKilled critical"})]),
        Step.tool_calls(
            [("validate_workflow_parameters", {"workflow_id": OOM_ID, "parameters": with_password})]
        ),
        Step.text(_answer()),
    ]


def _request(remediation_id: str, signal_type: str) -> service_pb2.AnalyzeIncidentRequest:
    body = {
        "incident": {
            "remediationId": remediation_id,
            "incidentId": f"fp-{remediation_id}",
            "signal": {
                "signalType": signal_type,
                "severity": "SEVERITY_CRITICAL",
                "component": "deployment",
                "namespace": "payments",
                "resourceKind": "Deployment",
                "resourceName": "payment-api",
            },
            "errorDetails": {"errorMessage": f"{signal_type}; calls sent Bearer {WRONG_TOKEN}"},
        }
    }
    return json_format.ParseDict(body, service_pb2.AnalyzeIncidentRequest())


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    stream = io.StringIO()
    configure_logging("DEBUG", "json", stream=stream)
    yield stream
    root.handlers[:] = handlers
    root.setLevel(level)


async def test_full_run_logs_no_secret(log_stream: io.StringIO, tmp_path: Path) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text(API_KEY + "\n", encoding="utf-8")
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text(CLIENT_TOKEN + "\n", encoding="utf-8")
    auth = (("authorization", f"Bearer {CLIENT_TOKEN}"),)

    async with (
        ScriptedLLMServer("openai", script_for=_script) as llm,
        running_server(
            catalog=bundled_catalog(declarations=False),  # no cluster is read here
            llm_provider="openai",
            llm_base_url=llm.base_url,
            llm_model="gpt-test",
            llm_api_key_file=str(key_file),
            llm_max_retries=0,
            auth_mode="static",
            auth_tokens_file=str(tokens_file),
            auth_static_namespaces=["*"],
            log_level="DEBUG",
        ) as srv,
    ):
        good = await srv.stub.AnalyzeIncident(
            _request("rr-secrets-ok", "OOMKilled"), metadata=auth, timeout=30
        )
        failed = srv.stub.AnalyzeIncident(
            _request("rr-secrets-401", "CrashLoopBackOff"), metadata=auth, timeout=30
        )
        try:
            await failed
        except grpc.aio.AioRpcError as exc:
            assert API_KEY not in (exc.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await srv.stub.AnalyzeIncident(
                _request("rr-secrets-denied", "OOMKilled"),
                metadata=(("authorization", f"Bearer {WRONG_TOKEN}"),),
                timeout=30,
            )
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED

    # The provider really received the key, so it was there to leak.
    assert llm.requests and all(
        r.headers.get("Authorization") == f"Bearer {API_KEY}" for r in llm.requests
    )
    assert good.result.selected_workflow.workflow_id == OOM_ID

    text = log_stream.getvalue()
    for secret in (API_KEY, CLIENT_TOKEN, WRONG_TOKEN, PASSWORD_VALUE):
        assert secret not in text, secret
    records = [json.loads(line) for line in text.splitlines()]
    own = [r for r in records if r.get("remediation_id") == "rr-secrets-ok"]
    assert own, "the investigation's records carry its remediation id"
    assert all(r.get("incident_id") == "fp-rr-secrets-ok" for r in own)
