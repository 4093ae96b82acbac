"""On an empty record (nothing read) the gate takes a condition over `observed`
alone from its one value on that record; everything else is still evaluated."""

from __future__ import annotations

import dataclasses

from hapi_grpc.domain.observed import EMPTY_VIEW, Observed
from hapi_grpc.domain.preconditions import Bound, Declared, evaluate, incident_activation
from hapi_grpc.domain.selection_gate import SelectionGate
from hapi_grpc.toolsets.kubernetes.log_facts import record_event
from tests.fakes.investigation import GOOD_PARAMS, bundled_catalog, make_incident


def test_an_empty_record_is_the_one_shared_view_and_a_read_is_not() -> None:
    observed = Observed()
    assert observed.activation() is EMPTY_VIEW
    record_event(observed, "Pod", "payments", "p-1", {"reason": "BackOff", "message": "x"})
    view = observed.activation()
    assert view is not EMPTY_VIEW and view["events"] and not EMPTY_VIEW["events"]


def test_every_catalog_condition_gives_on_an_empty_record_what_full_evaluation_gives() -> None:
    incident = incident_activation(make_incident())
    for schema in bundled_catalog()._schemas.values():
        pre = [c.declared() for c in schema.preconditions]
        inv = [c.declared() for c in schema.invariants]
        for params in ({}, GOOD_PARAMS, {**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "1Mi"}):
            shared = Bound(incident, EMPTY_VIEW, params)
            copied = Bound(incident, dict(EMPTY_VIEW), params)  # not the shared view
            assert shared.empty and not copied.empty
            for only_false in (False, True):
                got = evaluate(pre, inv, shared, only_false=only_false)
                want = evaluate(pre, inv, copied, only_false=only_false)
                assert got == want, schema.workflow_id


def test_conditions_over_the_incident_or_the_parameters_follow_them_on_an_empty_record() -> None:
    production = Declared("prod", 'incident.environment == "production"')
    sized = Declared("sized", "quantity(params.MEMORY_LIMIT_NEW) > 1000000.0 && !observed.evidence")
    incident = make_incident()
    staging = dataclasses.replace(
        incident, business=dataclasses.replace(incident.business, environment="staging")
    )
    for case, params, want in (
        (incident, GOOD_PARAMS, [True, True]),
        (staging, {**GOOD_PARAMS, "MEMORY_LIMIT_NEW": "1Ki"}, [False, False]),
        (incident, GOOD_PARAMS, [True, True]),
    ):
        gate = SelectionGate(case, Observed())
        bound = Bound(incident_activation(case), EMPTY_VIEW, params)
        results = evaluate([production, sized], (), bound)
        assert [r.holds for r in results] == want
        assert gate.observed.activation() is EMPTY_VIEW


def test_an_empty_record_refutes_without_building_an_activation() -> None:
    schema = bundled_catalog()._schemas["oomkill-increase-memory-v1"]
    bound = Bound(lambda: (_ for _ in ()).throw(AssertionError("incident built")), EMPTY_VIEW, {})
    found = evaluate([c.declared() for c in schema.preconditions], (), bound, only_false=True)
    assert "container_oomkilled" in [r.name for r in found]


def test_a_secret_registered_later_is_hidden_in_what_an_empty_record_shows() -> None:
    from hapi_grpc.domain.sensitive import register_secret, replace_secrets

    secret = "s3cr3t-empty-record-0123456789"
    declared = Declared("evidence", "observed.evidence", show=f'"labels: {secret}"')

    def shown() -> str:
        bound = Bound({}, EMPTY_VIEW, {})
        [result] = evaluate([declared], (), bound)
        assert result.holds is False
        return result.detail

    assert secret in shown()  # remembered for the empty record from here on
    register_secret(secret, owner="test-empty-record")
    try:
        assert secret not in shown()
    finally:
        replace_secrets("test-empty-record", [])
    assert secret in shown()
