"""Captured cases over gRPC: one per remediation of a tenant, labelled by its outcome,
bounded per case (no cluster: the first-hit model selects from the catalog)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format

from hapi.v1 import outcome_pb2
from hapi_grpc.capture.segments import closed_segments, read_records
from hapi_grpc.capture.unpack import unpack
from hapi_grpc.cases.case import load_case
from hapi_grpc.client import load_analyze_request
from tests.fakes.first_hit_model import FirstHitModel
from tests.fakes.investigation import wire_catalog
from tests.helpers.grpc_server import running_server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RID = "rr-capture-1"


def analyze_request(namespace: str) -> Any:
    req = load_analyze_request(EXAMPLES / "oomkilled.json")
    req.incident.remediation_id = RID
    req.incident.signal.namespace = namespace
    return req


def cases(root: Path) -> dict[str, Path]:
    """The cases captured, once the server closed their segment (unpacked first)."""
    if root.exists():
        unpack(root)
    found = [d for d in root.iterdir() if not d.name.startswith(".")] if root.exists() else []
    return {yaml.safe_load((d / "request.json").read_text())["incident"]["signal"]["namespace"]: d
            for d in found if (d / "expected.yaml").exists()}  # fmt: skip


async def wait_for(predicate: Any, timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "not captured in time"
        await asyncio.sleep(0.05)


def report(namespace: str, selected: Any) -> outcome_pb2.ReportRemediationOutcomeRequest:
    params = json_format.MessageToDict(selected.parameters)
    body = {
        "remediationId": RID,
        "attempt": 1,
        "target": {"namespace": namespace, "kind": "Deployment", "name": "payment-api",
                   "apiGroup": "apps"},
        "executed": {"workflowId": selected.workflow_id, "version": selected.version,
                     "parameters": params},
        "succeeded": {},
        "signalCleared": True,
    }  # fmt: skip
    return json_format.ParseDict(body, outcome_pb2.ReportRemediationOutcomeRequest())


async def test_an_outcome_labels_its_own_tenants_case_only(tmp_path: Path) -> None:
    root = tmp_path / "captured"
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), capture_dir=str(root)
    ) as srv:
        results = {}
        for namespace in ("payments", "billing"):  # the same id in two tenants
            response = await srv.stub.AnalyzeIncident(analyze_request(namespace), timeout=30)
            results[namespace] = response.result
        await wait_for(lambda: len(cases(root)) == 2)
        found = cases(root)
        assert found["payments"].name != found["billing"].name
        for directory in found.values():
            case = load_case(directory)
            assert case.expected.unreviewed and case.meta.captured is not None
            assert (directory / "catalog.yaml").exists() and case.meta.catalog == "catalog.yaml"

        selected = results["payments"].selected_workflow
        assert selected.workflow_id
        await srv.stub.ReportRemediationOutcome(report("payments", selected), timeout=10)
        labelled = found["payments"] / "expected.yaml"
        await wait_for(lambda: "source: outcome" in labelled.read_text())
    paid, billed = load_case(found["payments"]), load_case(found["billing"])
    assert not paid.expected.unreviewed
    assert paid.expected.workflows == (selected.workflow_id,)
    assert paid.meta.captured is not None and paid.meta.captured.outcome is not None
    assert billed.expected.unreviewed and billed.meta.captured.outcome is None  # type: ignore[union-attr]


async def test_a_case_over_its_bound_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "captured"
    async with running_server(
        catalog=wire_catalog(),
        llm=FirstHitModel(),
        capture_dir=str(root),
        capture_max_case_bytes=4096,  # less than the catalog file alone
    ) as srv:
        await srv.stub.AnalyzeIncident(analyze_request("payments"), timeout=30)
        await asyncio.sleep(1.0)
    assert cases(root) == {}
    assert not [d for d in root.iterdir() if d.name != ".segments"]  # nor a half-written one
    assert not closed_segments(root) and not list((root / ".segments").iterdir())


async def test_an_outcome_reported_before_its_case_is_unpacked_labels_it(tmp_path: Path) -> None:
    root = tmp_path / "captured"
    async with running_server(
        catalog=wire_catalog(), llm=FirstHitModel(), capture_dir=str(root)
    ) as srv:
        response = await srv.stub.AnalyzeIncident(analyze_request("payments"), timeout=30)
        selected = response.result.selected_workflow
        await srv.stub.ReportRemediationOutcome(report("payments", selected), timeout=10)
        assert not cases(root)  # still in the server's open segment
    [segment] = closed_segments(root)  # closed at shutdown: the case, then its outcome
    kinds = [next(k for k in ("case", "outcome") if k in r) for r in read_records(segment)
             if "name" in r]  # fmt: skip
    assert kinds == ["case", "outcome"]
    [directory] = cases(root).values()
    case = load_case(directory)
    assert case.expected.workflows == (selected.workflow_id,) and not case.expected.unreviewed
    assert case.meta.captured is not None and case.meta.captured.outcome is not None
    assert not closed_segments(root)
