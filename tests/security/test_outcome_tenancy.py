"""Outcome reports and remediation ids between tenants, through the real grpc.aio
server whose callers the test kube-apiserver authenticates and authorizes
(TokenReview, SubjectAccessReview): writing history is a permission of its own,
and another tenant's remediation id is another remediation."""

from __future__ import annotations

import secrets
from typing import Any

import grpc
import kubernetes
from google.protobuf import json_format

from hapi.v1 import outcome_pb2, service_pb2
from hapi_grpc.domain.tenancy import Tenant
from hapi_grpc.observability import metrics
from tests.fakes.first_hit_model import FirstHitModel
from tests.fakes.investigation import wire_catalog
from tests.fakes.kube_cluster import ensure_namespace
from tests.helpers.grpc_server import running_server
from tests.security.kube_world import World, analyze, bearer, code_of


def incident(remediation_id: str, namespace: str, force: bool = False) -> Any:
    request = analyze(namespace)
    request.incident.remediation_id = remediation_id
    request.force_reanalysis = force
    return request


def report(
    remediation_id: str, target: dict[str, str], *, failed: bool = False
) -> outcome_pb2.ReportRemediationOutcomeRequest:
    body: dict[str, Any] = {
        "remediationId": remediation_id,
        "attempt": 1,
        "target": target,
        "executed": {"workflowId": "oomkill-increase-memory-v1", "version": "1.0.0"},
    }
    if failed:
        body["failed"] = {"reason": "OOMKilled", "message": "the new limit was hit too"}
    else:
        body["succeeded"] = {}
    return json_format.ParseDict(body, outcome_pb2.ReportRemediationOutcomeRequest())


def target_of(reply: service_pb2.AnalyzeIncidentResponse, namespace: str) -> dict[str, str]:
    found = reply.result.target_resource
    return {"namespace": namespace, "kind": found.kind, "name": found.name}


def calibrated() -> float:
    return sum(
        sample.value
        for family in metrics.registry.collect()
        if family.name == "hapi_decision_calibration"
        for sample in family.samples
        if sample.name.endswith("_total")
    )


async def test_reading_a_namespace_is_not_writing_its_history(world: World) -> None:
    namespace = f"team-r-{secrets.token_hex(3)}"
    ensure_namespace(kubernetes.client.CoreV1Api(world.cluster.api_client()), namespace)
    world.bind_reader(namespace)  # the caller may `get pods` there, nothing more
    caller = bearer(world.caller_token)
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), **world.settings(authz_cache_seconds=0)
    ) as srv:
        reply = await srv.stub.AnalyzeIncident(incident("rr-read-1", namespace), metadata=caller)
        assert reply.result.remediation_id == "rr-read-1"  # reading: allowed
        target = target_of(reply, namespace)
        code, details = await code_of(
            srv.stub.ReportRemediationOutcome(
                report("rr-read-1", target, failed=True), metadata=caller, timeout=30
            )
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert namespace in details
        assert "create on remediationoutcomes.hapi-grpc.io" in details
        tenant = Tenant(namespace, world.caller_user)
        assert (await srv.server.history.by_remediation_id("rr-read-1", tenant)).outcomes == ()
        assert (await srv.server.history.context(_resource(target), "")).tier1 == ()

        world.bind_reporter(namespace)  # the shipped role, granted there
        ack = await srv.stub.ReportRemediationOutcome(
            report("rr-read-1", target, failed=True), metadata=caller, timeout=30
        )
        assert ack.decision_known and not ack.already_recorded
        # Granted in one namespace, not in another the caller may also read.
        elsewhere = {**target, "namespace": world.team_a}
        code, _ = await code_of(
            srv.stub.ReportRemediationOutcome(
                report("rr-read-2", elsewhere), metadata=caller, timeout=30
            )
        )
        assert code == grpc.StatusCode.PERMISSION_DENIED


def _resource(target: dict[str, str]) -> Any:
    from hapi_grpc.domain.result import TargetResource

    return TargetResource(target["namespace"], target["kind"], target["name"])


async def test_a_report_under_another_tenants_id_reaches_nothing_of_theirs(
    world: World,
) -> None:
    a, b = bearer(world.caller_token), bearer(world.caller_b_token)
    world.bind_reporter(world.team_a)
    world.bind_reporter(world.team_b, account="controller-b")
    shared, unused = f"rr-b-{secrets.token_hex(4)}", f"rr-never-{secrets.token_hex(4)}"
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), **world.settings()
    ) as srv:
        stub = srv.stub
        first = await stub.AnalyzeIncident(incident(shared, world.team_b), metadata=b, timeout=30)
        assert first.result.selected_workflow.workflow_id and not first.result.needs_human_review

        # A (team A only) reports under B's id on its own target: it joins nothing
        # of B's, and is answered exactly as a report under an id nobody used.
        mine = target_of(first, world.team_a)
        before = calibrated()
        under_b = await stub.ReportRemediationOutcome(
            report(shared, mine, failed=True), metadata=a, timeout=30
        )
        under_unused = await stub.ReportRemediationOutcome(
            report(unused, mine, failed=True), metadata=a, timeout=30
        )
        assert (under_b.decision_known, under_b.already_recorded) == (False, False)
        assert (under_unused.decision_known, under_unused.already_recorded) == (False, False)
        assert calibrated() == before  # A's failure is not B's decision's

        # B's own failure report is recorded (A's took no key of B's), joined
        # with B's decision, and counted in the calibration.
        theirs = target_of(first, world.team_b)
        ack = await stub.ReportRemediationOutcome(
            report(shared, theirs, failed=True), metadata=b, timeout=30
        )
        assert ack.decision_known and not ack.already_recorded
        assert calibrated() == before + 1
        record = await srv.server.history.by_remediation_id(
            shared, Tenant(world.team_b, world.caller_b_user)
        )
        assert [e.failure_reason for e in record.outcomes] == ["OOMKilled"]

        # A report on B's target is refused before any id is looked at: alike
        # for B's id and for an unused one.
        denied = [
            await code_of(
                stub.ReportRemediationOutcome(report(rid, theirs), metadata=a, timeout=30)
            )
            for rid in (shared, unused)
        ]
        assert denied[0] == denied[1] and denied[0][0] == grpc.StatusCode.PERMISSION_DENIED


async def test_an_analysis_under_another_tenants_id_is_an_analysis_of_its_own(
    world: World,
) -> None:
    a, b = bearer(world.caller_token), bearer(world.caller_b_token)
    shared, unused = f"rr-b-{secrets.token_hex(4)}", f"rr-never-{secrets.token_hex(4)}"
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), **world.settings()
    ) as srv:
        stub = srv.stub
        first = await stub.AnalyzeIncident(incident(shared, world.team_b), metadata=b, timeout=30)
        # A's analysis under B's id (of a team A incident) runs as under an
        # unused id: no ALREADY_EXISTS telling A that B's id exists.
        for rid in (shared, unused):
            reply = await stub.AnalyzeIncident(incident(rid, world.team_a), metadata=a, timeout=30)
            assert not reply.result.reused
        # A's forced re-analysis replaces A's own kept result, never B's: B's
        # retry gets B's result as it was kept.
        forced = await stub.AnalyzeIncident(
            incident(shared, world.team_a, force=True), metadata=a, timeout=30
        )
        assert not forced.result.reused
        retry = await stub.AnalyzeIncident(incident(shared, world.team_b), metadata=b, timeout=30)
        assert retry.result.reused
        assert retry.result.completed_at == first.result.completed_at
        # An incident of B's namespace is refused alike for B's id and an unused one.
        denied = [
            await code_of(stub.AnalyzeIncident(incident(rid, world.team_b), metadata=a, timeout=30))
            for rid in (shared, unused)
        ]
        assert denied[0] == denied[1] and denied[0][0] == grpc.StatusCode.PERMISSION_DENIED
