"""`alertmanager_active_alerts` for a caller confined to its namespace, through the real
server (static tokens) and a real Alertmanager: another namespace is refused as the
kubernetes tools refuse it, and alerts labelled with another namespace are left out."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from hapi.v1 import tools_pb2
from tests.fakes.alertmanager_server import AlertmanagerServer
from tests.fakes.scripted_llm import Step
from tests.toolsets.conftest import final_answer, request, serving

TOKEN = "alerts-token-8e2a4d"


async def test_a_confined_caller_sees_only_its_namespaces_alerts(
    alertmanager: AlertmanagerServer, tmp_path: Path
) -> None:
    own = request()  # an incident in namespace "payments"
    namespace = own.incident.signal.namespace
    tag = secrets.token_hex(3)
    theirs = {"alertname": f"LedgerLagging{tag}", "namespace": f"team-b-{tag}", "pod": "ledger-0"}
    alertmanager.post_alerts(
        [
            {"labels": {"alertname": f"PaymentsSlow{tag}", "namespace": namespace}},
            {"labels": {"alertname": f"NodeDiskFilling{tag}", "node": "worker-1"}},
            {"labels": theirs, "annotations": {"summary": "ledger-0 lags behind"}},
        ]
    )
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n", encoding="utf-8")
    script = [
        Step.tool_calls([("alertmanager_active_alerts", {})]),
        Step.tool_calls([("alertmanager_active_alerts", {"namespace": theirs["namespace"]})]),
        Step.tool_calls(
            [("alertmanager_active_alerts", {"labels": {"namespace": theirs["namespace"]}})]
        ),
        final_answer(),
    ]
    async with serving(
        script,
        alertmanager_url=alertmanager.url,
        auth_mode="static",
        auth_tokens_file=str(tokens),
        auth_static_namespaces=[namespace],
    ) as served:
        response = await served.stub.AnalyzeIncident(
            own, metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=60
        )
        sent = [json.dumps(r.json) for r in served.requests]

    everything, by_namespace, by_label = response.result.tool_calls
    assert everything.status == tools_pb2.TOOL_CALL_STATUS_SUCCESS
    names = json.loads(everything.result)["alerts_data"]["by_alertname"]
    # Its own namespace's alert and the cluster's (no namespace label) are there.
    assert {f"PaymentsSlow{tag}", f"NodeDiskFilling{tag}"} <= set(names)
    for call in (by_namespace, by_label):
        assert call.status == tools_pb2.TOOL_CALL_STATUS_INVALID_ARGUMENTS
        assert f"may read only namespace {namespace!r}" in call.result
    for text in (str(response), *sent):
        assert theirs["alertname"] not in text and "ledger-0" not in text
