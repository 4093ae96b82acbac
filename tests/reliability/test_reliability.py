"""The reliability suite, CI-sized: a few hundred calls against `hapi-grpc serve`.

`bench/reliability.py` runs the same categories with thousands of calls and a
soak of minutes. The pass rules are in `tests.fakes.reliability`; every
failure message names the category, the request and what the server did.
"""

from __future__ import annotations

import pytest

from tests.fakes.reliability import Report, Sizes
from tests.fakes.reliability_runs import run_all, run_sigterm

CI = Sizes(
    payloads_per_method=40,
    fault_calls=3,
    fault_deadline=3.0,
    cancel_calls=200,
    soak_seconds=10.0,
    soak_concurrency=16,
    sigterm_calls=200,
    sigterm_turn_seconds=1.0,
)

pytestmark = pytest.mark.slow


def _assert_clean(report: Report) -> None:
    print("\n" + report.table())
    assert report.ok, "reliability rules broken:\n" + report.table()


@pytest.mark.timeout(240)
async def test_hostile_callers_and_unlucky_dependencies() -> None:
    """Boundary and mutated input, dependency faults, cancellations and a short soak."""
    report = Report()
    await run_all(report, CI)
    assert report.categories["soak (10s mixed traffic)"].tried > 50
    _assert_clean(report)


@pytest.mark.timeout(120)
async def test_sigterm_under_load_answers_every_call_and_exits_cleanly() -> None:
    report = Report()
    await run_sigterm(report, CI)
    assert report.categories[f"SIGTERM under load ({CI.sigterm_calls} calls)"].tried >= 200
    _assert_clean(report)
