"""The shortcuts of premise evaluation decide as a fresh evaluation would: the search
results' activation reused by the check, what a search result met, a repeated check."""

from __future__ import annotations

import asyncio

import pytest

from hapi_grpc.domain.catalog import SearchHit
from hapi_grpc.domain.incident import Incident, SignalInfo
from hapi_grpc.domain.premises import PackError, parse_packs
from hapi_grpc.domain.premises.evaluate import LateBound
from hapi_grpc.domain.selection_gate import SelectionGate
from hapi_grpc.toolsets.kubernetes.log_facts import record_event
from tests.domain.premises.scenes import NS, oomkilled_statefulset, schema

RAISE = schema("IncreaseMemoryLimits", "NAMESPACE", "STATEFULSET_NAME", "MEMORY_LIMIT_NEW")
HIT = SearchHit(
    workflow_id=RAISE.workflow_id,
    version="1",
    confidence=0.9,
    action_type="IncreaseMemoryLimits",
    parameters=RAISE.parameters,
)


def params(limit: str) -> dict[str, str]:
    return {"NAMESPACE": NS, "STATEFULSET_NAME": "ledger", "MEMORY_LIMIT_NEW": limit}


def searched_then_checked(limit: str, *, read_between: bool = False) -> tuple[object, object]:
    """(the gate's verdict after a search, a fresh gate's verdict) on the same record."""
    incident = Incident("rr", SignalInfo("OOMKilled", None, "", namespace=NS))
    observed = oomkilled_statefulset()
    gate = SelectionGate(incident, observed)
    with gate.reusing():
        gate.prepare([(HIT.workflow_id, HIT)])
        assert gate.refuted(HIT.workflow_id, HIT) == []
    late = gate._late
    if read_between:
        record_event(observed, "Pod", NS, "ledger-0", {"reason": "BackOff", "message": "m"})
    verdict = asyncio.run(gate.check(HIT.workflow_id, RAISE, params(limit), HIT))
    assert late is not None and gate._late is None  # offered once
    if not read_between:
        assert late[1].params["memory_limit"] == limit  # the search's activation was used
    fresh = SelectionGate(incident, observed)
    return verdict, asyncio.run(fresh.check(HIT.workflow_id, RAISE, params(limit), HIT))


@pytest.mark.parametrize("limit", ["2Gi", "1Gi"])
@pytest.mark.parametrize("read_between", [False, True])
def test_a_check_after_a_search_decides_as_a_fresh_one(limit: str, read_between: bool) -> None:
    reused, fresh = searched_then_checked(limit, read_between=read_between)
    assert (reused is None) == (fresh is None) == (limit == "2Gi")
    if reused is not None and fresh is not None:
        assert reused.message == fresh.message


def test_a_late_bound_refuses_parameters_once_an_expression_read_them() -> None:
    observed = oomkilled_statefulset()
    late = LateBound({}, observed.activation(), None)
    assert late.value("size(observed.pods) == 1") == (True, True)
    assert late.value("has(params.x)") == (True, False)  # read empty: closed
    assert late.fill({"x": 1}, {}) is False
    fresh = LateBound({}, observed.activation(), None)
    assert fresh.value("size(observed.pods) == 1") == (True, True)
    assert fresh.fill({"x": 1}, {"id": "w"}) is True
    assert fresh.value("params.x == 1 && workflow.id == 'w'") == (True, True)


def test_a_pack_precondition_may_not_read_parameters() -> None:
    bad = {
        "packs": [
            {"action_type": "Foo", "preconditions": [{"name": "p", "expression": "has(params.x)"}]}
        ]
    }
    with pytest.raises(PackError, match="reads params: make it an invariant"):
        parse_packs(bad, "f.yaml")
