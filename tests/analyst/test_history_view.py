"""What the built-in analyst reads in a history answer (`HistoryView`): the same
facts the service's history check refuses on, from the tool's own payload."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hapi_grpc.analyst.history import HistoryView
from hapi_grpc.domain.history import HistoryEntry, Outcome, Windows, build_context, spec_hash
from hapi_grpc.domain.history.gate import history_veto
from hapi_grpc.toolsets.remediation_history import RemediationHistoryToolset
from hapi_grpc.toolsets.remediation_history.tools import HISTORY_TOOL, history_payload

DATA_KEY = RemediationHistoryToolset.data_key
CURRENT = spec_hash({"memory": "512Mi"})
FIXED = spec_hash({"memory": "1Gi"})
TARGET = "payments/Deployment/payment-api"


@dataclass(frozen=True)
class _Exchange:
    name: str
    result: dict[str, Any]


def view_of(*entries: HistoryEntry) -> tuple[HistoryView, Any]:
    now = time.time()
    context = build_context(TARGET, CURRENT, entries, Windows(), now)
    payload = history_payload(context, 10, now)
    return HistoryView.read([_Exchange(HISTORY_TOOL, {DATA_KEY: payload})]), context


def test_a_failure_that_left_the_spec_as_it_was_is_not_an_undone_fix() -> None:
    # A failed remediation changed nothing (and reported no spec after it): its
    # pre-remediation spec is the current one, and no fix was undone.
    failed = HistoryEntry(
        "rr-1",
        time.time() - 3600,
        Outcome.FAILED,
        workflow_id="restart-pods-v1",
        failure_reason="PermissionDenied",
        pre_spec_hash=CURRENT,
    )
    view, context = view_of(failed)
    other = {"workflow_id": "oomkill-increase-memory-v1", "read_only": False}
    assert history_veto(context, "oomkill-increase-memory-v1", "OOMKilled") is None
    assert view.objection(other, "OOMKilled") is None


def test_a_successful_fix_whose_spec_is_back_is_refused() -> None:
    undone = HistoryEntry(
        "rr-1",
        time.time() - 3600,
        Outcome.SUCCESS,
        workflow_id="oomkill-increase-memory-v1",
        pre_spec_hash=CURRENT,
        post_spec_hash=FIXED,
    )
    view, context = view_of(undone)
    hit = {"workflow_id": "restart-pods-v1", "read_only": False}
    assert history_veto(context, "restart-pods-v1", "OOMKilled") is not None
    objection = view.objection(hit, "OOMKilled")
    assert objection is not None and "replaced" in objection
