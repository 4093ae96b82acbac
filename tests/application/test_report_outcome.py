"""ReportRemediationOutcome through the real grpc.aio server: recorded in the
remediation history (shared by replicas through a real Redis), idempotent per
(remediation_id, attempt), validated and authorized like AnalyzeIncident."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from hapi.v1 import outcome_pb2, service_pb2
from hapi_grpc.domain.history import Outcome, spec_hash
from hapi_grpc.domain.result import TargetResource
from hapi_grpc.domain.tenancy import Tenant
from hapi_grpc.observability import metrics
from tests.domain.policy.test_grpc import OOM_ID, PARAMS, answer, request, search, servers
from tests.fakes.redis_server import RedisServer, running_redis
from tests.fakes.scripted_llm import ScriptedLLMServer
from tests.helpers.grpc_server import running_server

EXAMPLES = Path(__file__).parents[2] / "examples"
TARGET = TargetResource("payments", "Deployment", "payment-api", "apps")
TENANT = Tenant("payments")  # reports and decisions of callers without authentication
BEFORE = spec_hash({"replicas": 2, "template": {"memory": "512Mi"}})
AFTER = spec_hash({"replicas": 2, "template": {"memory": "1Gi"}})


def report(remediation_id: str, **overrides: Any) -> outcome_pb2.ReportRemediationOutcomeRequest:
    body: dict[str, Any] = {
        "remediationId": remediation_id,
        "attempt": 1,
        "target": {"namespace": "payments", "kind": "Deployment", "name": "payment-api",
                   "apiGroup": "apps"},
        "executed": {"workflowId": OOM_ID, "version": "1.0.0", "parameters": PARAMS},
        "succeeded": {},
        "signalCleared": True,
        "preRemediationSpecHash": BEFORE,
        "postRemediationSpecHash": AFTER,
    }  # fmt: skip
    body.update(overrides)
    return json_format.ParseDict(
        {k: v for k, v in body.items() if v is not None},
        outcome_pb2.ReportRemediationOutcomeRequest(),
    )


def violations(error: grpc.aio.AioRpcError) -> dict[str, str]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            found = error_details_pb2.BadRequest()
            detail.Unpack(found)
            return {v.field: v.reason for v in found.field_violations}
    return {}


def calibration(bucket: str, result: str) -> float:
    value = metrics.registry.get_sample_value(
        "hapi_decision_calibration_total", {"confidence": bucket, "result": result}
    )
    return value or 0.0


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with running_redis(tmp_path) as server:
        yield server


async def test_an_outcome_reported_to_one_replica_is_in_the_other_replicas_history(
    redis_server: RedisServer,
) -> None:
    async with (
        ScriptedLLMServer("openai", [search(), answer()]) as llm,
        servers(llm, 2, cache_url=redis_server.url) as (first, second),
    ):
        decided = await first.stub.AnalyzeIncident(request("rr-outcome-1"), timeout=20)
        assert decided.result.selected_workflow.workflow_id == OOM_ID
        assert not decided.result.needs_human_review
        before = calibration("0.9-1.0", "succeeded")

        ack = await second.stub.ReportRemediationOutcome(report("rr-outcome-1"), timeout=10)
        assert ack.decision_known and not ack.already_recorded

        for replica in (first, second):
            # The spec was put back as it was before the fix: a regression.
            context = await replica.server.history.context(TARGET, BEFORE)
            (entry,) = context.tier1
            assert context.target_resource == "payments/Deployment/payment-api"
            assert context.regression_detected
            assert entry.remediation_uid == "rr-outcome-1"
            assert entry.outcome is Outcome.SUCCESS
            assert entry.workflow_id == OOM_ID and entry.parameters == PARAMS
            assert entry.confidence == pytest.approx(0.9) and entry.automated is True
            assert entry.signal_type == "OOMKilled" and entry.signal_resolved is True
            assert entry.hash_match.value == "preRemediation"
            unchanged = await replica.server.history.context(TARGET, AFTER)
            assert not unchanged.regression_detected
            assert unchanged.tier1[0].hash_match.value == "postRemediation"
            record = await replica.server.history.by_remediation_id("rr-outcome-1", TENANT)
            assert record.decision is not None and record.decision.workflow_id == OOM_ID
            assert [e.attempt for e in record.outcomes] == [1]
        # An automated decision at 0.9 that worked: counted in its bucket, once.
        assert calibration("0.9-1.0", "succeeded") == before + 1
        await first.stub.ReportRemediationOutcome(report("rr-outcome-1"), timeout=10)
        assert calibration("0.9-1.0", "succeeded") == before + 1


async def test_a_report_is_idempotent_per_remediation_id_and_attempt(
    redis_server: RedisServer,
) -> None:
    async with (
        running_server(cache_url=redis_server.url) as first,
        running_server(cache_url=redis_server.url) as second,
    ):
        ack = await first.stub.ReportRemediationOutcome(report("rr-idem-1"), timeout=10)
        assert not ack.already_recorded and not ack.decision_known  # never decided here
        again = await second.stub.ReportRemediationOutcome(report("rr-idem-1"), timeout=10)
        assert again.already_recorded
        assert again.recorded_at == ack.recorded_at
        failed = report(
            "rr-idem-1",
            succeeded=None,
            failed={"reason": "OOMKilled", "failedStepIndex": 1, "message": "limit hit"},
        )
        with pytest.raises(grpc.aio.AioRpcError) as conflict:
            await second.stub.ReportRemediationOutcome(failed, timeout=10)
        assert conflict.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "attempt 1" in (conflict.value.details() or "")
        # The next attempt is a report of its own.
        failed.attempt = 2
        ack2 = await first.stub.ReportRemediationOutcome(failed, timeout=10)
        assert not ack2.already_recorded
        record = await second.server.history.by_remediation_id("rr-idem-1", TENANT)
        assert [(e.attempt, e.outcome, e.failure_reason) for e in record.outcomes] == [
            (1, Outcome.SUCCESS, ""),
            (2, Outcome.FAILED, "OOMKilled"),
        ]


async def test_a_declined_remediation_is_escalated_with_no_action() -> None:
    async with running_server() as srv:
        declined = report("rr-declined-1", executed=None, succeeded=None,
                          declined={"reason": "change freeze"})  # fmt: skip
        await srv.stub.ReportRemediationOutcome(declined, timeout=10)
        (entry,) = (await srv.server.history.context(TARGET, "")).tier1
        assert entry.outcome is Outcome.ESCALATED and entry.workflow_id is None
        assert entry.action_type is None


@pytest.mark.parametrize(
    ("overrides", "field", "rule"),
    [
        ({"attempt": 0}, "attempt", "uint32.gte_lte"),
        ({"target": None}, "target", "required"),
        ({"target": {"namespace": "payments", "kind": "deployment", "name": "x"}},
         "target.kind", "string.pattern"),
        ({"succeeded": None}, "result", "required"),
        ({"executed": None}, "", "executed_required"),
        ({"remediationId": "bad id"}, "remediation_id", "string.pattern"),
        ({"preRemediationSpecHash": "md5:abc"}, "pre_remediation_spec_hash", "string.pattern"),
        ({"succeeded": None, "failed": {"reason": "not a code"}}, "failed.reason",
         "string.pattern"),
        ({"executed": {"workflowId": OOM_ID, "parameters": {f"P{i}": i for i in range(65)}}},
         "executed.parameters", "parameters.max_fields"),
    ],
)  # fmt: skip
async def test_a_malformed_report_is_invalid_argument_with_the_field(
    overrides: dict[str, Any], field: str, rule: str
) -> None:
    async with running_server() as srv:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await srv.stub.ReportRemediationOutcome(report("rr-bad-1", **overrides), timeout=10)
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert violations(error.value).get(field) == rule, violations(error.value)
        assert (await srv.server.history.by_remediation_id("rr-bad-1", TENANT)).outcomes == ()


async def test_a_report_is_authorized_on_the_targets_namespace(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("outcome-caller-token-51c2\n", encoding="utf-8")
    auth = [("authorization", "Bearer outcome-caller-token-51c2")]
    async with running_server(
        auth_mode="static",
        auth_tokens_file=str(tokens),
        auth_static_namespaces=["team-*"],
        auth_static_report_namespaces=["team-a"],
    ) as srv:
        target = {"namespace": "team-a", "kind": "Deployment", "name": "api"}
        ack = await srv.stub.ReportRemediationOutcome(
            report("rr-auth-1", target=target), metadata=auth, timeout=10
        )
        assert not ack.already_recorded
        # team-b may be investigated (team-*), not written.
        for namespace in ("payments", "", "team-b"):
            other = {"namespace": namespace, "kind": "Deployment", "name": "api"}
            with pytest.raises(grpc.aio.AioRpcError) as denied:
                await srv.stub.ReportRemediationOutcome(
                    report("rr-auth-2", target=other), metadata=auth, timeout=10
                )
            assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await srv.stub.ReportRemediationOutcome(report("rr-auth-3", target=target), timeout=10)
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        for namespace in ("payments", "", "team-a", "team-b"):
            tenant = Tenant(namespace, "static-token")
            record = await srv.server.history.by_remediation_id("rr-auth-2", tenant)
            assert record.outcomes == ()


def test_the_example_report_is_a_valid_request() -> None:
    for path in sorted(EXAMPLES.glob("outcome-*.json")):
        json_format.Parse(path.read_text(), outcome_pb2.ReportRemediationOutcomeRequest())


async def test_without_redis_a_decision_still_answers_and_a_report_is_unavailable() -> None:
    from tests.fakes.local_process import free_port

    gone = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    async with running_server(cache_url=gone) as srv:
        body = json.loads((EXAMPLES / "oomkilled.json").read_text())
        decided = await srv.stub.AnalyzeIncident(
            json_format.ParseDict(body, service_pb2.AnalyzeIncidentRequest()), timeout=30
        )
        assert decided.result.remediation_id == body["incident"]["remediationId"]
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await srv.stub.ReportRemediationOutcome(report("rr-gone-1"), timeout=10)
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "remediation history unavailable" in (error.value.details() or "")
